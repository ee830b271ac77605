#include "tools/shell.hpp"

#include "tools/child_process.hpp"
#include "tools/process_reaper.hpp"
#include "tools/sandbox.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <thread>
#include <utility>

namespace troupe {

tool_spec shell_tool() {
  tool_spec spec;
  spec.name = "shell";
  spec.description =
    "Run a bash command in the workspace and return its combined stdout and stderr with "
    "the exit code. The working directory and exported variables persist between calls. "
    "Standard input is empty; do not start interactive programs. Long output keeps its "
    "head and tail. `timeout` (seconds) overrides the default time limit. With "
    "run_in_background the command runs on its own (a server, a long build): a task id comes "
    "back at once, task_output reads what it printed so far, task_stop ends it.";
  spec.input_schema = {
    {"type", "object"},
    {"properties",
     {{"command", {{"type", "string"}, {"description", "the bash command to run"}}},
      {"timeout",
       {{"type", "number"}, {"description", "seconds before the command is killed (max 86400)"}}},
      {"run_in_background",
       {{"type", "boolean"},
        {"description", "start it in the background and return a task id at once"}}}}},
    {"required", {"command"}}};
  spec.block_names = {"shell", "bash", "sh"};
  spec.kind = tool_kind::process;
  spec.rule_subject = "command";
  spec.examples = {{"", "ls -la"}};
  spec.input_from_block = [](std::string_view, std::string_view body) {
    return nlohmann::json{{"command", std::string{body}}};
  };
  return spec;
}

std::chrono::milliseconds shell_timeout(const nlohmann::json& input, const tool_context& ctx) {
  constexpr double max_seconds = 24 * 3600;
  if (auto t = input.find("timeout"); t != input.end() && t->is_number() && t->get<double>() > 0)
    return std::chrono::milliseconds{
      static_cast<int64_t>(std::min(t->get<double>(), max_seconds) * 1000)};
  return ctx.shell_timeout;
}

expected<shell_process> start_shell(const tool_context& ctx, std::string nonce) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0)
    return failure{std::string{"cannot create a pipe: "} + std::strerror(errno)};
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]);
    close(in[1]);
    return failure{std::string{"cannot create a pipe: "} + std::strerror(errno)};
  }
  // bash parses a script from a pipe one byte per read(2), so the framing is one loop, parsed
  // once, that then only reads data: each command arrives as its byte count (ten digits) and
  // its bytes, which `read -N` takes in one read(2) each (LC_ALL=C: -N counts characters in
  // the shell's locale; TMOUT unset: it would cut a long command short). The loop itself
  // arrives the same way, read whole by the -c bootstrap (which holds no secret: anyone may
  // read a command line) and unset before anything runs. The command runs at the top level (a
  // function would make its `declare`s local) inside a one-pass `for`, so that a bare `break`
  // or `continue` ends only the command, not the loop; its stdout and stderr start on the
  // pipe whatever an earlier `exec >file` did; the loop is one line, so an error's line number
  // is the command's own. Everything is called through `builtin` (a command may define
  // functions named read, eval or printf). After each command, before its end marker, a
  // read-only function enables those builtins again and drops the loop's variables with
  // whatever attributes the command gave them (`declare -i` would read the next count as
  // octal, `declare -n` would write elsewhere); where it cannot (a loop variable made
  // read-only, `enable -n builtin`) the shell exits before the marker, so that command's own
  // result says so and the next command runs in a new shell. `break 2` ends the shell the same
  // way: the shell never reads a command's bytes as its own script. fd 99 keeps the original
  // pipe (not 63: bash gives that to a process substitution and closes it after the command);
  // credential prompts must not wait for a terminal the agent does not have. The marker is an
  // argument in the loop's parsed text only, in no variable or function. (The framing keeps
  // the shell in step with troupe; it does not hold against a command set on breaking it:
  // `set -x` or a DEBUG trap shows the marker, `set -n` or `continue 2` holds the command
  // until its timeout, a read-only LC_ALL in a multibyte locale makes -N count characters.)
  std::string setup =
    "builtin unset __troupe_loop; exec 99>&1; export GIT_TERMINAL_PROMPT=0; "
    "__troupe_end() { builtin enable builtin enable eval printf read unset exit && "
    "builtin unset -n __troupe_size __troupe_cmd __troupe_once && "
    "builtin unset -v __troupe_size __troupe_cmd __troupe_once || builtin exit 97; "
    "builtin printf '\\n%s %d\\n' \"$2\" \"$1\" >&99; }; "
    "builtin readonly -f __troupe_end; "
    "while LC_ALL=C TMOUT= IFS= builtin read -r -N 10 __troupe_size && "
    "LC_ALL=C TMOUT= IFS= builtin read -r -N \"$__troupe_size\" __troupe_cmd; "
    "do for __troupe_once in 1; do builtin eval \"$__troupe_cmd\" </dev/null >&99 2>&1 99>&-; "
    "done; __troupe_end \"$?\" __TROUPE_DONE_" + nonce + "; done; builtin exit 97";
  std::string program = ctx.shell_program;
  std::vector<std::string> args = {
    "bash", "--noprofile", "--norc", "-c",
    "LC_ALL=C TMOUT= IFS= builtin read -r -N " + std::to_string(setup.size()) +
      " __troupe_loop && builtin eval \"$__troupe_loop\""};
  int filter_fd = -1;
  if (ctx.sandbox)
    if (auto wrapped = ctx.sandbox->wrap(program, args, ctx.cwd, filter_fd); !wrapped) {
      for (int fd : {in[0], in[1], out[0], out[1]})
        close(fd);
      return failure{wrapped.error()};
    }
  std::vector<const char*> argv;
  for (auto& arg : args)
    argv.push_back(arg.c_str());
  argv.push_back(nullptr);
  pid_t pid = -1;
  // Each shell its own unit: a shell killed mid-command takes what it started with it.
  auto owner = ctx.process_owner.empty() ? std::string{}
                                         : ctx.process_owner + "/shell-" + nonce.substr(0, 8);
  int rc = spawn_child(program, argv.data(), ctx.environment, ctx.cwd, in[0], out[1], out[1],
                       pid, owner, filter_fd);
  close(in[0]);
  close(out[1]);
  if (filter_fd >= 0)
    close(filter_fd);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    return failure{"cannot start " + ctx.shell_program + " in " + ctx.cwd.string() + ": " +
                   std::strerror(rc)};
  }
  shell_process shell{pid, in[1], out[0], std::move(nonce), std::move(owner)};
  if (::write(shell.input_fd, setup.data(), setup.size()) != static_cast<ssize_t>(setup.size())) {
    stop_shell(shell, true);
    return failure{"cannot set up " + ctx.shell_program};
  }
  return shell;
}

expected<started_child> start_background(const tool_context& ctx, const std::string& command,
                                         const std::filesystem::path& log,
                                         const std::string& owner) {
  child_spec spec;
  spec.program = ctx.shell_program;
  // The same framing as the session's shell: no credential prompts, no terminal.
  spec.argv = {"bash", "--noprofile", "--norc", "-c", "export GIT_TERMINAL_PROMPT=0\n" + command};
  spec.cwd = ctx.cwd;
  spec.environment = ctx.environment;
  spec.owner = owner;
  spec.output_file = log;
  if (ctx.sandbox)
    if (auto wrapped = ctx.sandbox->wrap(spec.program, spec.argv, spec.cwd, spec.pass_fd);
        !wrapped)
      return failure{wrapped.error()};
  auto started = start_child(spec);
  if (spec.pass_fd >= 0)
    close(spec.pass_fd);
  return started;
}

expected<bool> send_command(const shell_process& shell, const std::string& command) {
  // The loop started with the shell (see start_shell) reads the byte count, then exactly
  // that many bytes, so nothing in the command, not even a syntax error, can shift the
  // framing. bash drops NUL bytes without counting them: they are dropped here first. A final
  // newline ends the command's last line, as it would in a script.
  std::string text = command;
  text.erase(std::remove(text.begin(), text.end(), '\0'), text.end());
  if (text.empty() || text.back() != '\n')
    text += '\n';
  char size[16];
  std::snprintf(size, sizeof size, "%010zu", text.size());
  std::string script = size + text;
  size_t done = 0;
  while (done < script.size()) {
    auto n = write(shell.input_fd, script.data() + done, script.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return failure{std::string{"cannot send the command to bash: "} + std::strerror(errno)};
    done += static_cast<size_t>(n);
  }
  return true;
}

supervision command_supervision(const shell_process& shell, size_t output_cap,
                                std::chrono::milliseconds kill_grace) {
  supervision how;
  how.output_cap = output_cap;
  how.kill_grace = kill_grace;
  how.exit_grace = std::min(kill_grace, std::chrono::milliseconds{500});
  // Bytes that could still be the start of the marker are held back from the capture; what
  // comes after the marker belongs to background jobs and is dropped.
  how.framing = [marker = "\n__TROUPE_DONE_" + shell.nonce + " ", pending = std::string{}](
                  std::string_view chunk, output_capture& into) mutable -> std::optional<int32_t> {
    if (chunk.empty()) { // bash is gone
      into.append(pending.data(), pending.size());
      pending.clear();
      return std::nullopt;
    }
    pending.append(chunk);
    if (auto at = pending.find(marker); at != std::string::npos) {
      auto line_end = pending.find('\n', at + marker.size());
      if (line_end == std::string::npos)
        return std::nullopt; // the status has not arrived yet
      into.append(pending.data(), at);
      return static_cast<int32_t>(std::atoi(pending.c_str() + at + marker.size()));
    }
    if (pending.size() > marker.size() + 32) {
      auto keep = marker.size() + 32;
      into.append(pending.data(), pending.size() - keep);
      pending.erase(0, pending.size() - keep);
    }
    return std::nullopt;
  };
  return how;
}

process_exit command_exit(const child_end& end) {
  process_exit exit;
  exit.output = end.output;
  exit.total_bytes = static_cast<int64_t>(end.output_bytes);
  exit.truncated = end.truncated;
  exit.exit_code = end.exit_code;
  exit.shell_exited = !end.command_done;
  if (end.output_held)
    exit.output += "\n[a process the command started still holds its output (it left the "
                   "shell's process group or outlived bash); the rest of the output is lost]";
  return exit;
}

void stop_shell(shell_process& shell, bool reap) {
  if (shell.pid > 0) {
    ::kill(-shell.pid, SIGKILL);
    if (reap) {
      int status = 0;
      wait_child(shell.pid, status);
    }
  }
  // What left the group (setsid, a double fork) is found by its tag.
  stop_owned_processes(shell.owner);
  if (shell.input_fd >= 0)
    close(shell.input_fd);
  if (shell.output_fd >= 0)
    close(shell.output_fd);
  shell = shell_process{};
}

shell_ahead::shell_ahead(tool_context context, std::string nonce)
  : state_(std::make_shared<state>()) {
  auto work = [state = state_, context = std::move(context), nonce = std::move(nonce)]() mutable {
    ::pthread_setname_np(::pthread_self(), "shell.ahead");
    // Signals are for the threads that wait for them (the CLI's forwarder), never this one.
    sigset_t all;
    sigfillset(&all);
    ::pthread_sigmask(SIG_BLOCK, &all, nullptr);
    // Not started: the executor's own start says why, as the first command's result.
    std::optional<shell_process> shell;
    try {
      if (auto started = start_shell(context, std::move(nonce)))
        shell = std::move(*started);
    } catch (const std::exception&) {
      // As for a start that failed: the executor starts its own, and says what went wrong.
    }
    // Released before anyone hears: the last holder of the sandbox's walls removes its /tmp,
    // which is not for this thread to do while the process ends.
    context = tool_context{};
    {
      std::lock_guard<std::mutex> lock{state->mutex};
      state->shell = std::move(shell);
      state->done = true;
    }
    state->started.notify_all();
    state.reset();
    for (;;)
      ::pause(); // every signal is blocked: never returns
  };
  try {
    std::thread{std::move(work)}.detach();
  } catch (const std::system_error&) {
    state_->done = true; // no thread, no shell: the executor starts its own
  }
}

shell_ahead::~shell_ahead() {
  std::unique_lock<std::mutex> lock{state_->mutex};
  state_->started.wait(lock, [this] { return state_->done; });
  if (state_->shell)
    stop_shell(*state_->shell, true);
}

std::optional<shell_process> shell_ahead::take() {
  std::unique_lock<std::mutex> lock{state_->mutex};
  state_->started.wait(lock, [this] { return state_->done; });
  return std::exchange(state_->shell, std::nullopt);
}

tool_result shell_result(const process_exit& exit, bool timed_out,
                         std::chrono::milliseconds timeout, bool interrupted) {
  tool_result result;
  result.output = exit.output;
  result.exit_code = exit.exit_code;
  result.truncated = exit.truncated;
  if (timed_out) {
    result.is_error = true;
    auto tenths = (timeout.count() + 50) / 100;
    result.output += "\n[command timed out after " + std::to_string(tenths / 10) + "." +
                     std::to_string(tenths % 10) + " s and was killed with its process group]";
  } else if (interrupted) {
    result.is_error = true;
    result.output += "\n[interrupted by the user; the command was killed]";
  } else if (exit.exit_code != 0) {
    result.is_error = true;
    result.output += "\n[exit code " + std::to_string(exit.exit_code) + "]";
  }
  return result;
}

} // namespace troupe
