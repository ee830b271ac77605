#include "actors/hook_runner.hpp"

#include <unistd.h>

#include <chrono>
#include <map>
#include <regex>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "store/ids.hpp"
#include "actors/process_runner.hpp"
#include "protocol/bounded_json.hpp"
#include "tools/child_process.hpp"
#include "tools/claude_code_names.hpp"

namespace troupe {

namespace {

/// What a hook's output may take in memory, and in the events that report it.
constexpr size_t output_cap = 1 << 20;
constexpr size_t reported_cap = 4000;

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

/// How long output is still read after a hook has exited, from what it left running.
constexpr std::chrono::milliseconds output_grace{500};

/// A hook command's end as the runner reports it.
hook_process_result hook_result(const child_end& end) {
  hook_process_result result;
  result.exit_code = end.exit_code;
  result.out = end.output;
  result.err = end.errors;
  result.timed_out = end.timed_out;
  result.duration_ms = end.duration_ms;
  return result;
}

hook_process_result failed_hook(const std::string& why) {
  hook_process_result failed;
  failed.exit_code = 127;
  failed.err = why;
  return failed;
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
  /// The holds on the running hooks, by (request, command): dropped when the runner ends, so
  /// every hook still running is killed with its group and the process never waits for one.
  std::map<std::pair<uint64_t, uint64_t>, child_control> running;
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
      if (!st.config.permission_mode.empty())
        input["permission_mode"] = st.config.permission_mode;
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
        if (!chosen[i]->callback_id.empty()) {
          // The client's own hook: asked over its channel, answered as a command would be.
          if (!st.config.callbacks) {
            caf::anon_send(runner, hook_atom::value, number, i,
                           failed_hook("no client to call the hook " + chosen[i]->callback_id));
            continue;
          }
          auto started = std::chrono::steady_clock::now();
          self->request(st.config.callbacks, chosen[i]->timeout, hook_atom::value,
                        chosen[i]->callback_id, input,
                        input.value("tool_use_id", std::string{}))
            .then(
              [=](hook_process_result& result) {
                result.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                       std::chrono::steady_clock::now() - started)
                                       .count();
                caf::anon_send(runner, hook_atom::value, number, i, std::move(result));
              },
              [=](caf::error& err) {
                auto failed = failed_hook("the client's hook did not answer: " +
                                          self->system().render(err));
                caf::anon_send(runner, hook_atom::value, number, i, std::move(failed));
              });
          continue;
        }
        // Scripts written for Claude Code find the project where they expect it.
        child_spec spec;
        spec.program = st.config.shell_program;
        spec.argv = {"bash", "-c", chosen[i]->command};
        spec.cwd = st.config.cwd;
        spec.environment = st.config.environment;
        spec.environment["CLAUDE_PROJECT_DIR"] = st.config.cwd.string();
        spec.environment["TROUPE_PROJECT_DIR"] = st.config.cwd.string();
        // What the hook leaves running (setsid, a double fork) is found by this tag when it
        // ends. Not a unit of the session's tag: the session's end must not kill its
        // SessionEnd hooks.
        if (!st.config.session_id.empty())
          spec.owner = st.config.session_id + ":hook-" + random_hex(6);
        spec.input = true;
        auto control = child_control::make();
        if (!control) {
          caf::anon_send(runner, hook_atom::value, number, i, failed_hook(control.error()));
          continue;
        }
        auto child = start_child(spec);
        if (!child) {
          ::close(control->second);
          caf::anon_send(runner, hook_atom::value, number, i, failed_hook(child.error()));
          continue;
        }
        st.running.emplace(std::make_pair(number, i), std::move(control->first));
        supervision how;
        how.input = text;
        how.output_cap = output_cap;
        how.head_only = true;
        how.timeout = chosen[i]->timeout;
        how.exit_grace = output_grace;
        how.owner = spec.owner;
        run_child_detached(self->system(), *child, std::move(how), control->second,
                           [runner, number, i](child_end end) {
                             caf::anon_send(runner, hook_atom::value, number, i,
                                            hook_result(end));
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
      st.running.erase({number, index});
      pending.results[index] = std::move(result);
      if (--pending.left > 0)
        return;
      std::vector<std::string> outcomes;
      std::vector<bool> quiet;
      auto outcome =
        combine_hook_results(pending.request.event, pending.results, &outcomes, &quiet);
      for (size_t i = 0; i < pending.results.size(); ++i) {
        auto e = run_event(st, pending.hook_ids[i], pending.request.event, *pending.commands[i]);
        const auto& r = pending.results[i];
        e.finished = true;
        e.exit_code = r.exit_code;
        e.outcome = outcomes[i];
        // "suppressOutput": the answer is not shown (its decision still counts).
        e.stdout_text = quiet[i] ? std::string{} : r.out.substr(0, reported_cap);
        e.stderr_text = r.err.substr(0, reported_cap);
        e.duration_ms = r.duration_ms;
        if (e.outcome == "error" || e.outcome == "timeout")
          spdlog::log(st.config.failures_shown ? spdlog::level::info : spdlog::level::warn,
                      "{} hook `{}` {} (exit {}): {}", to_string(e.event), e.command, e.outcome,
                      e.exit_code, trimmed(e.stderr_text));
        self->send(st.session, std::move(e));
      }
      for (auto& text : outcome.system_messages)
        self->send(st.session, notice_event{st.config.session_id, "hook_message", text});
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
    auto alias = claude_tool_name(tool);
    return alias != tool && std::regex_match(alias, pattern);
  } catch (const std::regex_error&) {
    return false; // checked when the settings were read
  }
}

hook_outcome combine_hook_results(hook_event event,
                                  const std::vector<hook_process_result>& results,
                                  std::vector<std::string>* outcomes,
                                  std::vector<bool>* quiet) {
  hook_outcome outcome;
  auto add = [](std::string& into, const std::string& text) {
    if (text.empty())
      return;
    into += (into.empty() ? "" : "\n") + text;
  };
  auto fallback = "blocked by a " + std::string{to_string(event)} + " hook";
  // The strongest decision wins (deny, then ask, then allow); its first reason is kept.
  auto decide = [&](hook_permission permission, const std::string& why) {
    if (permission <= outcome.permission)
      return;
    outcome.permission = permission;
    outcome.permission_reason = why;
  };
  for (auto& r : results) {
    ++outcome.ran;
    std::string what = "success";
    bool suppressed = false;
    if (r.timed_out) {
      what = "timeout";
    } else if (r.exit_code == 2) {
      what = "blocked";
      outcome.blocked = true;
      auto why = trimmed(r.err);
      add(outcome.reason, why.empty() ? fallback : why);
      decide(hook_permission::deny, why.empty() ? fallback : why);
    } else if (r.exit_code != 0) {
      what = "error";
    } else {
      // Output that is not JSON (or nests too deep) is the hook's text, not an answer.
      auto parsed = parse_json_bounded(r.out);
      auto json = parsed ? std::move(*parsed) : nlohmann::json{};
      if (json.is_object()) {
        auto specific = json.find("hookSpecificOutput");
        bool has_specific = specific != json.end() && specific->is_object();
        // {"decision": "block" | "approve"}, or Claude Code's newer PreToolUse form
        // {"hookSpecificOutput": {"permissionDecision": "deny" | "ask" | "allow"}}: fields of
        // another type than these are not an answer (logged as the hook's output, never a
        // crash).
        auto decision = text_field(json, "decision");
        auto permission = has_specific ? text_field(*specific, "permissionDecision") : "";
        if (decision == "block" || permission == "deny") {
          what = "blocked";
          outcome.blocked = true;
          auto why = decision == "block" ? text_field(json, "reason")
                                         : text_field(*specific, "permissionDecisionReason");
          add(outcome.reason, why.empty() ? fallback : why);
          decide(hook_permission::deny, why.empty() ? fallback : why);
        } else if (permission == "ask") {
          decide(hook_permission::ask, text_field(*specific, "permissionDecisionReason"));
        } else if (permission == "allow") {
          decide(hook_permission::allow, text_field(*specific, "permissionDecisionReason"));
        } else if (decision == "approve") {
          decide(hook_permission::allow, text_field(json, "reason"));
        }
        if (has_specific && event == hook_event::pre_tool_use)
          if (auto updated = specific->find("updatedInput");
              updated != specific->end() && updated->is_object())
            outcome.updated_input = *updated;
        if (auto go_on = json.find("continue"); go_on != json.end() && *go_on == false) {
          what = "stopped";
          outcome.stop = true;
          add(outcome.stop_reason, text_field(json, "stopReason"));
        }
        if (auto message = text_field(json, "systemMessage"); !message.empty())
          outcome.system_messages.push_back(message);
        if (auto hide = json.find("suppressOutput"); hide != json.end() && *hide == true)
          suppressed = true;
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
    if (quiet != nullptr)
      quiet->push_back(suppressed);
  }
  return outcome;
}

hook_runner_actor spawn_hook_runner(caf::actor_system& sys, hook_runner_config config,
                                    session_actor session) {
  return sys.spawn(hook_runner, std::move(config), std::move(session));
}

} // namespace troupe
