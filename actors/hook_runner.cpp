#include "actors/hook_runner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <regex>

#include <caf/actor_system.hpp>
#include <caf/blocking_actor.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/ids.hpp"
#include "protocol/bounded_json.hpp"
#include "tools/child_process.hpp"
#include "tools/process_reaper.hpp"

extern char** environ;

namespace troupe {

namespace {

/// What a hook's output may take in memory, and in the events that report it.
constexpr size_t output_cap = 1 << 20;
constexpr size_t reported_cap = 4000;

const std::map<std::string, std::string> claude_names = {
  {"shell", "Bash"}, {"read", "Read"},   {"write", "Write"}, {"edit", "Edit"},
  {"patch", "MultiEdit"}, {"glob", "Glob"}, {"grep", "Grep"}, {"ls", "LS"},
  {"task", "Task"},  {"todo", "TodoWrite"}};

// A string field of a hook's answer; empty when it is missing or of another type.
std::string text_field(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.pop_back();
  return text;
}

// Starts `bash -c command` in `cwd`, in a session of its own with a clean signal state, its
// three standard streams on pipes. Returns the pid, or -1 with `error` set.
pid_t start_hook(const hook_runner_config& config, const std::string& command,
                 const std::string& owner, int fds[3], std::string& error) {
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 ||
      ::pipe2(err, O_CLOEXEC) != 0) {
    error = std::string{"cannot create a pipe: "} + std::strerror(errno);
    return -1;
  }
  // Scripts written for Claude Code find the project where they expect it.
  std::vector<std::string> env_text;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "CLAUDE_PROJECT_DIR=", 19) != 0)
      env_text.emplace_back(*e);
  env_text.push_back("CLAUDE_PROJECT_DIR=" + config.cwd.string());
  env_text.push_back("TROUPE_PROJECT_DIR=" + config.cwd.string());
  std::vector<char*> envp;
  for (auto& e : env_text)
    envp.push_back(e.data());
  envp.push_back(nullptr);
  const char* argv[] = {"bash", "-c", command.c_str(), nullptr};
  pid_t pid = -1;
  int rc = spawn_child(config.shell_program, argv, envp.data(), config.cwd, in[0], out[1],
                       err[1], pid, owner);
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) {
    ::close(in[1]);
    ::close(out[0]);
    ::close(err[0]);
    error = "cannot start " + config.shell_program + ": " + std::strerror(rc);
    return -1;
  }
  fds[0] = in[1];
  fds[1] = out[0];
  fds[2] = err[0];
  for (int i = 0; i < 3; ++i)
    ::fcntl(fds[i], F_SETFL, ::fcntl(fds[i], F_GETFL) | O_NONBLOCK);
  return pid;
}

/// How long output is still read after a hook has exited, from what it left running.
constexpr std::chrono::milliseconds output_grace{500};
/// How often a hook whose output stays open is checked for having exited.
constexpr std::chrono::milliseconds exit_check{50};

// Runs one hook to its end, its timeout, or a byte on `cancel` (its runner is going away).
// Blocks: called on a thread of its own. Owns `cancel` and closes it.
hook_process_result run_hook(const hook_runner_config& config, const hook_command& hook,
                             const std::string& input, int cancel) {
  using clock = std::chrono::steady_clock;
  auto started = clock::now();
  hook_process_result result;
  int fds[3];
  std::string error;
  // What the hook leaves running (setsid, a double fork) is found by this tag when it ends.
  // Not a unit of the session's tag: the session's end must not kill its SessionEnd hooks.
  auto owner = config.session_id.empty() ? std::string{}
                                         : config.session_id + ":hook-" + random_hex(6);
  pid_t pid = start_hook(config, hook.command, owner, fds, error);
  if (pid < 0) {
    ::close(cancel);
    result.exit_code = 127;
    result.err = error;
    return result;
  }
  auto deadline = started + hook.timeout;
  size_t written = 0;
  bool open[3] = {true, true, true};
  if (input.empty()) {
    ::close(fds[0]);
    open[0] = false;
  }
  char buffer[65536];
  int status = 0;
  bool reaped = false;
  // Once the hook has exited, what it left in the background may hold its output open: that
  // gets a moment to finish writing, then the answer is what the hook wrote.
  std::optional<clock::time_point> drain_until;
  while (open[1] || open[2]) {
    if (!reaped && wait_child(pid, status, WNOHANG) == pid) {
      reaped = true;
      drain_until = clock::now() + output_grace;
    }
    auto now = clock::now();
    if (drain_until && now >= *drain_until)
      break;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    if (left.count() <= 0 && reaped)
      break; // it exited in time: only what it left behind is still writing
    if (left.count() <= 0) {
      result.timed_out = true;
      ::kill(-pid, SIGKILL); // the whole group: whatever the hook started goes too
      break;
    }
    // Woken now and then to see whether the hook itself has exited.
    auto wait = std::min(left, drain_until ? std::chrono::duration_cast<std::chrono::milliseconds>(
                                               *drain_until - now)
                                           : exit_check);
    pollfd p[4];
    nfds_t n = 0;
    int which[4];
    for (int i = 0; i < 3; ++i)
      if (open[i]) {
        p[n] = {fds[i], static_cast<short>(i == 0 ? POLLOUT : POLLIN), 0};
        which[n++] = i;
      }
    p[n] = {cancel, POLLIN, 0};
    which[n++] = 3;
    if (::poll(p, n, static_cast<int>(wait.count())) < 0 && errno != EINTR)
      break;
    if (p[n - 1].revents != 0) {
      ::kill(-pid, SIGKILL); // the session ended: nobody waits for this hook any more
      break;
    }
    for (nfds_t k = 0; k + 1 < n; ++k) {
      if (p[k].revents == 0)
        continue;
      int i = which[k];
      if (i == 0) {
        auto w = ::write(fds[0], input.data() + written, input.size() - written);
        if (w > 0)
          written += static_cast<size_t>(w);
        if (w < 0 && errno != EAGAIN && errno != EINTR)
          written = input.size(); // the hook does not read its input: fine
        if (written == input.size()) {
          ::close(fds[0]);
          open[0] = false;
        }
        continue;
      }
      auto r = ::read(fds[i], buffer, sizeof buffer);
      if (r > 0) {
        auto& into = i == 1 ? result.out : result.err;
        if (into.size() < output_cap)
          into.append(buffer, std::min(static_cast<size_t>(r), output_cap - into.size()));
      } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
        ::close(fds[i]);
        open[i] = false;
      }
    }
  }
  for (int i = 0; i < 3; ++i)
    if (open[i])
      ::close(fds[i]);
  // A hook that closed its output may still run: its deadline and the cancel pipe hold until
  // it has exited too.
  while (!result.timed_out && !reaped) {
    auto waited = wait_child(pid, status, WNOHANG);
    if (waited == pid) {
      reaped = true;
      break;
    }
    if (waited < 0 && errno != EINTR)
      break;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    pollfd wait_cancel{cancel, POLLIN, 0};
    if (::poll(&wait_cancel, 1, static_cast<int>(std::min<int64_t>(left.count(), 20))) > 0) {
      ::kill(-pid, SIGKILL);
      break;
    }
  }
  ::close(cancel);
  if (!reaped)
    wait_child(pid, status);
  stop_owned_processes(owner);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status)
                     : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                           : -1;
  result.duration_ms =
    std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - started).count();
  return result;
}

/// One request in flight: its commands, their results so far, and who waits.
struct pending_request {
  hook_request request;
  std::vector<const hook_command*> commands;
  std::vector<hook_process_result> results;
  std::vector<std::string> hook_ids;
  size_t left = 0;
  caf::typed_response_promise<hook_outcome> promise;
};

struct hook_runner_state {
  hook_runner_config config;
  session_actor session;
  uint64_t next_request = 0;
  std::map<uint64_t, pending_request> pending;
  /// The write ends of the running hooks' cancel pipes, by (request, command).
  std::map<std::pair<uint64_t, uint64_t>, int> cancels;

  ~hook_runner_state() {
    // The session is gone: every hook still running is killed with its group, so the process
    // never waits for one at exit.
    for (auto& [key, fd] : cancels) {
      [[maybe_unused]] auto n = ::write(fd, "x", 1);
      ::close(fd);
    }
  }
};

using self_ptr = hook_runner_actor::stateful_pointer<hook_runner_state>;

hook_run_event run_event(const hook_runner_state& st, const std::string& id,
                         hook_event event, const hook_command& hook) {
  hook_run_event e;
  e.session_id = st.config.session_id;
  e.hook_id = id;
  e.event = event;
  e.command = hook.command;
  return e;
}

hook_runner_actor::behavior_type hook_runner(self_ptr self, hook_runner_config config,
                                             session_actor session) {
  self->state.config = std::move(config);
  self->state.session = std::move(session);
  return {
    [=](hook_atom, hook_request& request) -> caf::result<hook_outcome> {
      auto& st = self->state;
      std::vector<const hook_command*> chosen;
      for (auto& hook : st.config.commands)
        if (hook.event == request.event &&
            (!is_tool_event(request.event) || hook_matches(hook.matcher, request.tool)))
          chosen.push_back(&hook);
      if (chosen.empty())
        return hook_outcome{};
      auto input = request.input;
      input["session_id"] = st.config.session_id;
      input["transcript_path"] = st.config.transcript_path.string();
      input["cwd"] = st.config.cwd.string();
      input["hook_event_name"] = request.event;
      input["event"] = request.event;
      auto text = input.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
      auto number = st.next_request++;
      auto& pending = st.pending[number];
      pending.request = std::move(request);
      pending.commands = chosen;
      pending.results.resize(chosen.size());
      pending.left = chosen.size();
      pending.promise = self->make_response_promise<hook_outcome>();
      auto runner = hook_runner_actor{self};
      for (uint64_t i = 0; i < chosen.size(); ++i) {
        auto id = "hook_" + random_hex(12);
        pending.hook_ids.push_back(id);
        self->send(st.session, run_event(st, id, pending.request.event, *chosen[i]));
        auto cfg = st.config;
        auto hook = *chosen[i];
        int cancel[2];
        if (::pipe2(cancel, O_CLOEXEC) != 0) {
          hook_process_result failed;
          failed.exit_code = 127;
          failed.err = std::string{"cannot create a pipe: "} + std::strerror(errno);
          caf::anon_send(runner, hook_atom::value, number, i, std::move(failed));
          continue;
        }
        st.cancels[{number, i}] = cancel[1];
        int cancel_read = cancel[0];
        self->system().spawn<caf::detached>([=](caf::blocking_actor*) {
          caf::anon_send(runner, hook_atom::value, number, i,
                         run_hook(cfg, hook, text, cancel_read));
        });
      }
      return pending.promise;
    },
    [=](hook_atom, uint64_t number, uint64_t index, hook_process_result& result) {
      auto& st = self->state;
      auto it = st.pending.find(number);
      if (it == st.pending.end() || index >= it->second.results.size())
        return;
      auto& pending = it->second;
      if (auto c = st.cancels.find({number, index}); c != st.cancels.end()) {
        ::close(c->second);
        st.cancels.erase(c);
      }
      pending.results[index] = std::move(result);
      if (--pending.left > 0)
        return;
      std::vector<std::string> outcomes;
      auto outcome = combine_hook_results(pending.request.event, pending.results, &outcomes);
      for (size_t i = 0; i < pending.results.size(); ++i) {
        auto e = run_event(st, pending.hook_ids[i], pending.request.event, *pending.commands[i]);
        const auto& r = pending.results[i];
        e.finished = true;
        e.exit_code = r.exit_code;
        e.outcome = outcomes[i];
        e.stdout_text = r.out.substr(0, reported_cap);
        e.stderr_text = r.err.substr(0, reported_cap);
        e.duration_ms = r.duration_ms;
        if (e.outcome == "error" || e.outcome == "timeout")
          spdlog::warn("{} hook `{}` {} (exit {}): {}", to_string(e.event), e.command, e.outcome,
                       e.exit_code, trimmed(e.stderr_text));
        self->send(st.session, std::move(e));
      }
      pending.promise.deliver(std::move(outcome));
      st.pending.erase(it);
    },
  };
}

} // namespace

bool hook_matches(const std::string& matcher, const std::string& tool) {
  if (matcher.empty() || matcher == "*")
    return true;
  try {
    std::regex pattern{matcher};
    if (std::regex_match(tool, pattern))
      return true;
    auto alias = claude_names.find(tool);
    return alias != claude_names.end() && std::regex_match(alias->second, pattern);
  } catch (const std::regex_error&) {
    return false; // checked when the settings were read
  }
}

hook_outcome combine_hook_results(hook_event event,
                                  const std::vector<hook_process_result>& results,
                                  std::vector<std::string>* outcomes) {
  hook_outcome outcome;
  auto add = [](std::string& into, const std::string& text) {
    if (text.empty())
      return;
    into += (into.empty() ? "" : "\n") + text;
  };
  for (auto& r : results) {
    ++outcome.ran;
    std::string what = "success";
    if (r.timed_out) {
      what = "timeout";
    } else if (r.exit_code == 2) {
      what = "blocked";
      outcome.blocked = true;
      auto why = trimmed(r.err);
      add(outcome.reason,
          why.empty() ? "blocked by a " + std::string{to_string(event)} + " hook" : why);
    } else if (r.exit_code != 0) {
      what = "error";
    } else {
      // Output that is not JSON (or nests too deep) is the hook's text, not an answer.
      auto parsed = parse_json_bounded(r.out);
      auto json = parsed ? std::move(*parsed) : nlohmann::json{};
      if (json.is_object()) {
        auto specific = json.find("hookSpecificOutput");
        bool has_specific = specific != json.end() && specific->is_object();
        auto fallback = "blocked by a " + std::string{to_string(event)} + " hook";
        // {"decision": "block"}, or Claude Code's newer PreToolUse form
        // {"hookSpecificOutput": {"permissionDecision": "deny"}}: fields of another type than
        // these are not an answer (logged as the hook's output, never a crash).
        if (text_field(json, "decision") == "block") {
          what = "blocked";
          outcome.blocked = true;
          auto why = text_field(json, "reason");
          add(outcome.reason, why.empty() ? fallback : why);
        } else if (has_specific && text_field(*specific, "permissionDecision") == "deny") {
          what = "blocked";
          outcome.blocked = true;
          auto why = text_field(*specific, "permissionDecisionReason");
          add(outcome.reason, why.empty() ? fallback : why);
        }
        add(outcome.additional_context, text_field(json, "additionalContext"));
        if (has_specific)
          add(outcome.additional_context, text_field(*specific, "additionalContext"));
        if (auto m = json.find("messages"); m != json.end() && m->is_array())
          for (auto& item : *m) {
            if (item.is_string())
              outcome.messages.push_back(item.get<std::string>());
            else if (item.is_object() && item.contains("content") && item["content"].is_string())
              outcome.messages.push_back(item["content"].get<std::string>());
          }
      } else if (event == hook_event::session_start || event == hook_event::user_prompt_submit) {
        add(outcome.additional_context, trimmed(r.out));
      }
    }
    if (outcomes != nullptr)
      outcomes->push_back(what);
  }
  return outcome;
}

hook_runner_actor spawn_hook_runner(caf::actor_system& sys, hook_runner_config config,
                                    session_actor session) {
  return sys.spawn(hook_runner, std::move(config), std::move(session));
}

} // namespace troupe
