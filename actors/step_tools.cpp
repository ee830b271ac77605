// The step actor's tool round: PreToolUse hooks first (they may rewrite a call, decide its
// permission or stop the session), then each call decided by the permission policy (allowed,
// denied, or asked about), PostToolUse hooks after it, consecutive read-only calls run at once,
// and the results in call order whatever order they finished in.

#include <memory>

#include <caf/actor_system.hpp>

#include "actors/step_state.hpp"
#include "protocol/mcp.hpp"
#include "tools/claude_code_names.hpp"

namespace troupe {

namespace {

// Every call the reply made gets a result, so the log never holds an unanswered call.
void answer_remaining(step_state& st, const std::string& why) {
  auto& calls = st.outcome.reply.tool_calls;
  for (; st.next_call < calls.size(); ++st.next_call) {
    tool_result result;
    result.output = "[not run: " + why + "]";
    result.is_error = true;
    result.exit_code = -1;
    st.outcome.tool_messages.push_back(make_tool_message(calls[st.next_call], result));
  }
}

// What a tool hook reads about a call, in Claude Code's names so that its scripts carry over
// ("Bash", "file_path"); troupe's own name beside them.
nlohmann::json tool_hook_input(const tool_call& call) {
  return {{"tool_name", claude_tool_name(call.name)},
          {"tool_input", claude_tool_input(call.name, call.input)},
          {"tool_use_id", call.id},
          {"troupe_tool_name", call.name}};
}

// A PostToolUse hook's `tool_response`: troupe's fields, and the ones Claude Code's scripts
// read for the shell (`stdout`, `stderr`: troupe's shell gives both streams as one) and the
// file tools (`filePath`, `success`).
nlohmann::json tool_hook_response(const tool_call& call, const tool_result& result) {
  nlohmann::json response = {
    {"output", result.output}, {"is_error", result.is_error}, {"exit_code", result.exit_code}};
  if (call.name == "shell") {
    response["stdout"] = result.output;
    response["stderr"] = "";
  }
  if (call.input.is_object())
    if (auto path = call.input.find("path"); path != call.input.end() && path->is_string() &&
                                             claude_tool_input(call.name, {{"path", ""}})
                                               .contains("file_path")) {
      response["filePath"] = *path;
      response["success"] = !result.is_error;
    }
  return response;
}

// An MCP tool the step does not offer never reaches its server: a rule removed it (decide
// refuses it), or it is a name the model made up, or one its server does not (or no longer)
// list (answered as an unknown built-in tool is, by decide_and_run).
bool unoffered_mcp_tool(const step_state& st, const tool_call& call) {
  return st.config.registry->find(call.name) == nullptr && !mcp_server_of(call.name).empty();
}

// Decides, and notes on the call where its path leads as decided: the tool holds it to that.
permission_decision decide(step_state& st, tool_call& call) {
  const auto* spec = st.config.registry->find(call.name);
  // An MCP tool the step does not offer because a rule removed it is refused by that rule.
  if (unoffered_mcp_tool(st, call) && st.permissions && st.permissions->removes_tool(call.name)) {
    permission_decision denied{permission_outcome::deny, call.name + " is denied by a rule"};
    denied.from_rule = true; // no hook's "allow" lifts it
    return denied;
  }
  // Unknown tools, an unoffered MCP tool's included, get an error result, not a refusal.
  if (!st.permissions || spec == nullptr)
    return {permission_outcome::allow, ""};
  call.approved_path = st.permissions->real_target(*spec, call.input);
  return st.permissions->can_use_tool(*spec, call.input);
}

bool is_read_only(const step_state& st, const tool_call& call) {
  const auto* spec = st.config.registry->find(call.name);
  return spec != nullptr && spec->read_only;
}

// The agent supervisor carries out the agent tools: task and task_wait, and task_output or
// task_stop given an agent's id (a shell task's id goes to the executor).
bool for_agents(const tool_spec* spec, const tool_call& call) {
  if (spec == nullptr)
    return false;
  if (spec->kind == tool_kind::subagent)
    return true;
  if (spec->kind != tool_kind::task || !call.input.is_object())
    return false;
  auto id = call.input.find("task_id");
  return id != call.input.end() && id->is_string() &&
         id->get_ref<const std::string&>().rfind("agent_", 0) == 0;
}

// A background launch returns at once (the supervisor spawns the agent afterwards), so the
// launches of one reply all go out together, beyond the cap on parallel calls.
bool is_background_launch(const step_state& st, const tool_call& call) {
  const auto* spec = st.config.registry->find(call.name);
  return spec != nullptr && spec->kind == tool_kind::subagent && call.input.is_object() &&
         call.input.value("mode", nlohmann::json{}) == "background";
}

// Answers the current call without running it and moves on.
void answer_without_running(step_ptr self, tool_result result) {
  auto& st = self->state;
  st.outcome.tool_messages.push_back(
    make_tool_message(st.outcome.reply.tool_calls[st.next_call++], result));
  run_next_call(self);
}

// The result of a call that was refused, marked with who refused it: front ends show it as
// refused, not as a command that ran and failed.
tool_result refused_result(std::string text, refusal by) {
  auto result = error_result(std::move(text));
  result.refused = by;
  return result;
}

void deny(step_ptr self, const std::string& reason,
          denial_cause cause = denial_cause::refused) {
  auto& st = self->state;
  const auto& call = st.outcome.reply.tool_calls[st.next_call];
  st.outcome.denials.push_back({call.name, call.id, call.input, reason, cause});
  answer_without_running(self,
                         refused_result("Permission denied: " + reason + ".",
                                        cause == denial_cause::plan_mode ? refusal::plan_mode
                                                                         : refusal::permission));
}

void run_batch(step_ptr self, size_t size);

// Puts an "ask" to the person at the terminal; headless, or in dont-ask mode, it is a denial.
// A hook's question (`by_hook`) is asked whatever the rules say, so no rule is suggested.
void ask(step_ptr self, const std::string& reason, bool by_hook = false) {
  auto& st = self->state;
  const auto& call = st.outcome.reply.tool_calls[st.next_call];
  if (st.permissions->mode == permission_mode::dont_ask) {
    deny(self, reason + "; permission mode dont-ask refuses what no rule allows, so " +
                 st.permissions->allow_hint(*st.config.registry->find(call.name), call.input));
    return;
  }
  if (!st.config.asker) {
    deny(self, reason + "; this run cannot ask anyone, so " +
                 (by_hook ? std::string{"the call was not run"}
                          : st.permissions->allow_hint(*st.config.registry->find(call.name),
                                                       call.input)));
    return;
  }
  st.asking = true;
  auto serial = ++st.ask_serial;
  // The question says what an "always" answer adds, since a rule allows more than this call
  // (`a` to `rm -rf build` allows `rm` with any arguments).
  auto always = st.permissions->always_rules(*st.config.registry->find(call.name), call.input);
  auto question = reason;
  if (!always.rules.empty()) {
    question += "\n[a]lways adds for this session:";
    for (auto& rule : always.rules)
      question += " " + rule.text;
  }
  if (!always.unallowable.empty())
    question += std::string{"\n[a]lways "} + (always.rules.empty() ? "" : "also ") +
                "allows no rule for " + always.unallowable + " (it will be asked again)";
  self->request(st.config.asker, caf::infinite, ask_atom::value, call, question)
    .then(
      [=](permission_verdict& verdict) {
        auto& s = self->state;
        if (!s.asking || s.ask_serial != serial)
          return; // an interrupt answered the call meanwhile
        s.asking = false;
        if (s.interrupted) {
          run_next_call(self);
          return;
        }
        auto answer = verdict.answer;
        auto& asked = s.outcome.reply.tool_calls[s.next_call];
        if (answer != permission_answer::no && verdict.updated_input.is_object()) {
          // The client edited the call: it runs as edited, and no rule's refusal is lifted by
          // the edit.
          const auto* spec = s.config.registry->find(asked.name);
          if (auto problem = validate_input(*spec, verdict.updated_input)) {
            answer_without_running(self, error_result("Not run: the client rewrote the call's "
                                                      "input into one the tool cannot take: " +
                                                      *problem));
            return;
          }
          auto judged = s.permissions->can_use_tool(*spec, verdict.updated_input);
          if (judged.outcome == permission_outcome::deny) {
            deny(self, judged.reason, judged.cause);
            return;
          }
          asked.input = std::move(verdict.updated_input);
          asked.approved_path = s.permissions->real_target(*spec, asked.input);
        }
        if (answer == permission_answer::no && !verdict.message.empty()) {
          // A client's refusal with a reason: the model reads it and the turn goes on, unless
          // the client also asked to stop.
          if (verdict.interrupt) {
            s.outcome.declined = true;
            s.interrupted = true;
          }
          deny(self, verdict.message);
          return;
        }
        if (answer == permission_answer::always) {
          auto rules =
            s.permissions->always_rules(*s.config.registry->find(asked.name), asked.input).rules;
          s.permissions->session_allow.insert(s.permissions->session_allow.end(), rules.begin(),
                                              rules.end());
          run_batch(self, 1);
        } else if (answer == permission_answer::yes) {
          run_batch(self, 1);
        } else {
          // Declined: the call is answered, and control goes back to the user.
          s.outcome.denials.push_back({asked.name, asked.id, asked.input, "declined by the user"});
          s.outcome.declined = true;
          s.interrupted = true;
          answer_without_running(
            self, refused_result("The user declined to run this call.", refusal::user));
        }
      },
      [=](caf::error&) {
        auto& s = self->state;
        if (!s.asking || s.ask_serial != serial)
          return;
        s.asking = false;
        deny(self, reason + "; nobody answered");
      });
}

tool_result with_note(tool_result result, hook_event hook, const std::string& note) {
  if (!note.empty())
    result.output += "\n[" + std::string{to_string(hook)} + " hook: " + note + "]";
  return result;
}

// PostToolUse hooks see every result of the batch (at once); a block or context they return is
// added to the result the model reads.
void run_post_tool_hooks(step_ptr self) {
  auto& st = self->state;
  st.hooking = true;
  auto serial = ++st.hook_serial;
  auto left = std::make_shared<size_t>(st.batch.size());
  for (size_t i = 0; i < st.batch.size(); ++i) {
    const auto& call = st.outcome.reply.tool_calls[st.next_call + i];
    const auto& result = *st.batch[i];
    auto input = tool_hook_input(call);
    input["tool_response"] = tool_hook_response(call, result);
    hook_request request{hook_event::post_tool_use, call.name, std::move(input)};
    auto done = [=](const hook_outcome& hook) {
      auto& s = self->state;
      if (!s.hooking || s.hook_serial != serial)
        return; // an interrupt moved on
      auto& r = *s.batch[i];
      if (hook.blocked)
        r = with_note(r, hook_event::post_tool_use, hook.reason);
      r = with_note(r, hook_event::post_tool_use, hook.additional_context);
      if (hook.stop && !s.hook_stop) {
        s.hook_stop = hook.stop_reason; // the batch is logged, then nothing more runs
        s.hook_stop_event = hook_event::post_tool_use;
      }
      if (--*left == 0) {
        s.hooking = false;
        log_batch(self);
      }
    };
    self->request(st.config.hooks, caf::infinite, hook_atom::value, std::move(request))
      .then(done, [=](caf::error&) { done(hook_outcome{}); });
  }
}

// Records one result of the batch; when the batch is complete its results are logged in call
// order, whatever order they finished in.
void on_batch_result(step_ptr self, size_t position, tool_result result) {
  auto& st = self->state;
  st.batch[position] = std::move(result);
  if (--st.batch_pending > 0)
    return;
  if (st.config.post_tool_hooks && !st.interrupted)
    run_post_tool_hooks(self);
  else
    log_batch(self);
}

// The permission check of the call at next_call — as PreToolUse hooks left it — with what they
// decided: "allow" answers the question the mode would ask (deny rules, ask rules and plan mode
// still hold), "ask" asks as if no rule allowed the call (headless: refused). Then the call
// runs, with the read-only calls after it that need no question when no hook runs before them.
void decide_and_run(step_ptr self, const hook_outcome& hook) {
  auto& st = self->state;
  auto& calls = st.outcome.reply.tool_calls;
  auto decision = decide(st, calls[st.next_call]);
  if (hook.permission == hook_permission::allow &&
      decision.outcome == permission_outcome::ask && !decision.from_rule)
    decision = {permission_outcome::allow, "allowed by a PreToolUse hook"};
  if (decision.outcome == permission_outcome::deny) {
    deny(self, decision.reason, decision.cause);
    return;
  }
  // Not a refusal (which would end a headless run permission_blocked): an error result.
  if (unoffered_mcp_tool(st, calls[st.next_call])) {
    answer_without_running(self, error_result("unknown tool '" + calls[st.next_call].name +
                                              "': it is not among the tools offered to you; "
                                              "call one that is"));
    return;
  }
  if (hook.permission == hook_permission::ask) {
    ask(self,
        "a PreToolUse hook asks for approval" +
          (hook.permission_reason.empty() ? "" : ": " + hook.permission_reason),
        true);
    return;
  }
  if (decision.outcome == permission_outcome::ask) {
    ask(self, decision.reason);
    return;
  }
  // A read-only call runs together with the read-only calls after it that need no question.
  size_t size = 1;
  size_t counted = is_background_launch(st, calls[st.next_call]) ? 0 : 1;
  if (!st.config.pre_tool_hooks && is_read_only(st, calls[st.next_call]))
    while (st.next_call + size < calls.size() && is_read_only(st, calls[st.next_call + size]) &&
           (counted < st.config.max_parallel_calls ||
            is_background_launch(st, calls[st.next_call + size])) &&
           decide(st, calls[st.next_call + size]).outcome == permission_outcome::allow) {
      counted += is_background_launch(st, calls[st.next_call + size]) ? 0 : 1;
      ++size;
    }
  run_batch(self, size);
}

// PreToolUse hooks see a call before the permission check: they may refuse it (the model reads
// why and goes on), rewrite its input ("updatedInput", in Claude Code's names: the check and
// the tool see the new input), decide its permission, add context to its result, or stop the
// session. With such hooks calls run one at a time, each after its hooks.
void run_pre_tool_hooks(step_ptr self) {
  auto& st = self->state;
  const auto& call = st.outcome.reply.tool_calls[st.next_call];
  st.hooking = true;
  auto serial = ++st.hook_serial;
  auto done = [=](const hook_outcome& hook) {
    auto& s = self->state;
    if (!s.hooking || s.hook_serial != serial)
      return; // an interrupt answered the call meanwhile
    s.hooking = false;
    if (s.interrupted) {
      run_next_call(self);
      return;
    }
    auto& current = s.outcome.reply.tool_calls[s.next_call];
    if (hook.stop) {
      s.hook_stop = hook.stop_reason; // this call does not run either
      s.hook_stop_event = hook_event::pre_tool_use;
      run_next_call(self);
      return;
    }
    if (hook.blocked) {
      answer_without_running(
        self, refused_result("Blocked by a PreToolUse hook: " + hook.reason, refusal::hook));
      return;
    }
    if (hook.updated_input.is_object()) {
      auto updated = troupe_tool_input(current.name, hook.updated_input);
      if (const auto* spec = s.config.registry->find(current.name))
        if (auto problem = validate_input(*spec, updated)) {
          answer_without_running(
            self, error_result("Not run: a PreToolUse hook rewrote the call's input into one the "
                               "tool cannot take: " + *problem));
          return;
        }
      current.input = std::move(updated);
      s.updated_inputs[current.id] = current.input;
    }
    if (!hook.additional_context.empty())
      s.call_notes[current.id] = hook.additional_context;
    decide_and_run(self, hook);
  };
  self->request(st.config.hooks, caf::infinite, hook_atom::value,
                hook_request{hook_event::pre_tool_use, call.name, tool_hook_input(call)})
    .then(done, [=](caf::error&) { done(hook_outcome{}); });
}

// Runs the `size` calls from next_call at once (their permission already granted).
void run_batch(step_ptr self, size_t size) {
  auto& st = self->state;
  const auto& calls = st.outcome.reply.tool_calls;
  st.batch.assign(size, std::nullopt);
  st.batch_pending = size;
  for (size_t i = 0; i < size; ++i) {
    const auto& call = calls[st.next_call + i];
    auto on_error = [=](caf::error& err) {
      on_batch_result(self, i, error_result("tool executor failed: " + self->system().render(err)));
    };
    const auto* spec = st.config.registry->find(call.name);
    if (for_agents(spec, call) && !st.config.agents)
      on_batch_result(self, i, error_result("subagents are not available in this session"));
    else if (for_agents(spec, call))
      // In order, at normal priority: the supervisor's first spawn (a message to itself) queues
      // behind the launches already sent, so a reply's launches are answered before it spawns
      // more than one batch. (High priority would not help: CAF's mailbox weighs its queues, it
      // does not empty the urgent one first.)
      self->request(st.config.agents, caf::infinite, execute_atom::value, call)
        .then([=](tool_result& result) { on_batch_result(self, i, std::move(result)); },
              on_error);
    else
      self->request(st.executor, caf::infinite, execute_atom::value, call)
        .then([=](tool_result& result) { on_batch_result(self, i, std::move(result)); },
              on_error);
  }
}

} // namespace

// The batch's results go into the outcome, in call order, with what hooks said about them.
void log_batch(step_ptr self) {
  auto& st = self->state;
  for (auto& r : st.batch) {
    const auto& call = st.outcome.reply.tool_calls[st.next_call++];
    auto note = st.call_notes.find(call.id);
    auto result = note == st.call_notes.end()
                    ? *r
                    : with_note(*r, hook_event::pre_tool_use, note->second);
    auto m = make_tool_message(call, result);
    if (auto updated = st.updated_inputs.find(call.id); updated != st.updated_inputs.end())
      m.meta = {{"hook_updated_input", updated->second}};
    st.outcome.tool_messages.push_back(std::move(m));
  }
  st.batch.clear();
  run_next_call(self);
}

// Runs the next call, or the next run of consecutive read-only calls (up to
// config.max_parallel_calls) all at once; anything else runs alone, in order.
void run_next_call(step_ptr self) {
  auto& st = self->state;
  auto& calls = st.outcome.reply.tool_calls;
  if (st.interrupted) {
    answer_remaining(st, "the step was interrupted before this call");
    finish_step(self, step_status::interrupted);
    return;
  }
  if (st.hook_stop) {
    answer_remaining(st, "a hook stopped the session before this call");
    st.outcome.hook_stopped = true;
    st.outcome.stop_event = st.hook_stop_event;
    st.outcome.stop_reason = *st.hook_stop;
    finish_step(self, step_status::replied);
    return;
  }
  if (st.next_call == calls.size()) {
    finish_step(self, step_status::replied);
    return;
  }
  if (st.config.pre_tool_hooks)
    run_pre_tool_hooks(self);
  else
    decide_and_run(self, hook_outcome{});
}

} // namespace troupe
