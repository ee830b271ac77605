#include "actors/step.hpp"

#include <map>
#include <optional>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/ids.hpp"
#include "tools/tool_parser.hpp"

namespace troupe {

namespace {

enum class step_phase { idle, generating, running_tools, compacting };

// A reply cut at the output limit is continued at most this often; its pieces are joined.
constexpr int32_t max_continuations = 3;

struct step_state {
  step_config config;
  session_actor session;
  model_client_actor model;
  tool_executor_actor executor;
  std::vector<tool_descriptor> tools;

  step_phase phase = step_phase::idle;
  bool interrupted = false;
  caf::typed_response_promise<step_outcome> promise;
  step_outcome outcome;
  /// The generation request of the step, kept for continuations after an output-limit cut.
  model_request request;
  /// The pieces of a reply cut at the output limit, joined so far.
  std::optional<message> partial;
  /// The compaction summary in flight.
  caf::typed_response_promise<model_reply> compaction;
  size_t next_call = 0;
  /// Set while the person at the terminal is asked about a call; the serial tells a late
  /// answer (after an interrupt moved on) from the current one.
  bool asking = false;
  uint64_t ask_serial = 0;
  /// The permission policy, with the session's "always" answers added to it.
  std::optional<permission_policy> permissions;
  /// Results of the batch of calls in flight, by position from next_call.
  std::vector<std::optional<tool_result>> batch;
  size_t batch_pending = 0;
  /// Set while external hooks run around a call (PreToolUse before it, PostToolUse after the
  /// batch); the serial tells a late answer (after an interrupt moved on) from the current one.
  bool hooking = false;
  uint64_t hook_serial = 0;
  /// What PreToolUse hooks added about a call, by call id: appended to its result.
  std::map<std::string, std::string> call_notes;
};


using self_ptr = step_actor::stateful_pointer<step_state>;

void finish(self_ptr self, step_status status) {
  auto& st = self->state;
  st.outcome.status = status;
  st.phase = step_phase::idle;
  st.promise.deliver(std::move(st.outcome));
  st.outcome = step_outcome{};
}

// Every call the reply made gets a result, so the log never holds an unanswered call.
void answer_remaining_as_interrupted(step_state& st) {
  auto& calls = st.outcome.reply.tool_calls;
  for (; st.next_call < calls.size(); ++st.next_call) {
    tool_result result;
    result.output = "[not run: the step was interrupted before this call]";
    result.is_error = true;
    result.exit_code = -1;
    st.outcome.tool_messages.push_back(make_tool_message(calls[st.next_call], result));
  }
}

// Decides, and notes on the call where its path leads as decided: the tool holds it to that.
permission_decision decide(step_state& st, tool_call& call) {
  const auto* spec = st.config.registry->find(call.name);
  if (!st.permissions || spec == nullptr) // unknown tools get their error from the executor
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

void run_next_call(self_ptr self);

// Answers the current call without running it and moves on.
void answer_without_running(self_ptr self, tool_result result) {
  auto& st = self->state;
  st.outcome.tool_messages.push_back(
    make_tool_message(st.outcome.reply.tool_calls[st.next_call++], result));
  run_next_call(self);
}

void deny(self_ptr self, const std::string& reason) {
  auto& st = self->state;
  const auto& call = st.outcome.reply.tool_calls[st.next_call];
  st.outcome.denials.push_back({call.name, call.id, call.input, reason});
  answer_without_running(self, error_result("Permission denied: " + reason + "."));
}

void run_batch(self_ptr self, size_t size);
void start_calls(self_ptr self, size_t size);

// Puts an "ask" to the person at the terminal; headless, it is a denial.
void ask(self_ptr self, const std::string& reason) {
  auto& st = self->state;
  const auto& call = st.outcome.reply.tool_calls[st.next_call];
  if (!st.config.asker) {
    deny(self, reason + "; this run cannot ask anyone, so allow it with --allow '" +
                 st.permissions->always_rule(*st.config.registry->find(call.name), call.input)
                   .text +
                 "', a settings rule or --permission-mode");
    return;
  }
  st.asking = true;
  auto serial = ++st.ask_serial;
  self->request(st.config.asker, caf::infinite, ask_atom::value, call, reason)
    .then(
      [=](const std::string& answer) {
        auto& s = self->state;
        if (!s.asking || s.ask_serial != serial)
          return; // an interrupt answered the call meanwhile
        s.asking = false;
        if (s.interrupted) {
          run_next_call(self);
          return;
        }
        const auto& asked = s.outcome.reply.tool_calls[s.next_call];
        if (answer == "always") {
          s.permissions->session_allow.push_back(
            s.permissions->always_rule(*s.config.registry->find(asked.name), asked.input));
          start_calls(self, 1);
        } else if (answer == "yes") {
          start_calls(self, 1);
        } else {
          // Declined: the call is answered, and control goes back to the user.
          s.outcome.denials.push_back({asked.name, asked.id, asked.input, "declined by the user"});
          s.outcome.declined = true;
          s.interrupted = true;
          answer_without_running(self, error_result("The user declined to run this call."));
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

tool_result with_note(tool_result result, const std::string& hook, const std::string& note) {
  if (!note.empty())
    result.output += "\n[" + hook + " hook: " + note + "]";
  return result;
}

// The batch's results go into the outcome, in call order, with what hooks said about them.
void log_batch(self_ptr self) {
  auto& st = self->state;
  for (auto& r : st.batch) {
    const auto& call = st.outcome.reply.tool_calls[st.next_call++];
    auto note = st.call_notes.find(call.id);
    auto result = note == st.call_notes.end() ? *r : with_note(*r, "PreToolUse", note->second);
    st.outcome.tool_messages.push_back(make_tool_message(call, result));
  }
  st.batch.clear();
  run_next_call(self);
}

// PostToolUse hooks see every result of the batch (at once); a block or context they return is
// added to the result the model reads.
void run_post_tool_hooks(self_ptr self) {
  auto& st = self->state;
  st.hooking = true;
  auto serial = ++st.hook_serial;
  auto left = std::make_shared<size_t>(st.batch.size());
  for (size_t i = 0; i < st.batch.size(); ++i) {
    const auto& call = st.outcome.reply.tool_calls[st.next_call + i];
    const auto& result = *st.batch[i];
    hook_request request{"PostToolUse", call.name,
                         {{"tool_name", call.name},
                          {"tool_input", call.input},
                          {"tool_use_id", call.id},
                          {"tool_response",
                           {{"output", result.output},
                            {"is_error", result.is_error},
                            {"exit_code", result.exit_code}}}}};
    auto done = [=](const hook_outcome& hook) {
      auto& s = self->state;
      if (!s.hooking || s.hook_serial != serial)
        return; // an interrupt moved on
      auto& r = *s.batch[i];
      if (hook.blocked)
        r = with_note(r, "PostToolUse", hook.reason);
      r = with_note(r, "PostToolUse", hook.additional_context);
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
void on_batch_result(self_ptr self, size_t position, tool_result result) {
  auto& st = self->state;
  st.batch[position] = std::move(result);
  if (--st.batch_pending > 0)
    return;
  if (st.config.post_tool_hooks && !st.interrupted)
    run_post_tool_hooks(self);
  else
    log_batch(self);
}

// PreToolUse hooks decide about a call that may run: a block answers it with the reason (the
// model reads it and goes on), context is added to its result. With such hooks calls run one
// at a time, each after its hooks.
void start_calls(self_ptr self, size_t size) {
  auto& st = self->state;
  if (!st.config.pre_tool_hooks) {
    run_batch(self, size);
    return;
  }
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
    const auto& current = s.outcome.reply.tool_calls[s.next_call];
    if (hook.blocked) {
      answer_without_running(self, error_result("Blocked by a PreToolUse hook: " + hook.reason));
      return;
    }
    if (!hook.additional_context.empty())
      s.call_notes[current.id] = hook.additional_context;
    run_batch(self, 1);
  };
  self->request(st.config.hooks, caf::infinite, hook_atom::value,
                hook_request{"PreToolUse", call.name,
                             {{"tool_name", call.name},
                              {"tool_input", call.input},
                              {"tool_use_id", call.id}}})
    .then(done, [=](caf::error&) { done(hook_outcome{}); });
}

// Runs the next call, or the next run of consecutive read-only calls (up to
// config.max_parallel_calls) all at once; anything else runs alone, in order.
void run_next_call(self_ptr self) {
  auto& st = self->state;
  auto& calls = st.outcome.reply.tool_calls;
  if (st.interrupted) {
    answer_remaining_as_interrupted(st);
    finish(self, step_status::interrupted);
    return;
  }
  if (st.next_call == calls.size()) {
    finish(self, step_status::replied);
    return;
  }
  auto decision = decide(st, calls[st.next_call]);
  if (decision.outcome == permission_outcome::deny) {
    deny(self, decision.reason);
    return;
  }
  if (decision.outcome == permission_outcome::ask) {
    ask(self, decision.reason);
    return;
  }
  // A read-only call runs together with the read-only calls after it that need no question.
  size_t size = 1;
  size_t counted = is_background_launch(st, calls[st.next_call]) ? 0 : 1;
  if (is_read_only(st, calls[st.next_call]))
    while (st.next_call + size < calls.size() && is_read_only(st, calls[st.next_call + size]) &&
           (counted < st.config.max_parallel_calls ||
            is_background_launch(st, calls[st.next_call + size])) &&
           decide(st, calls[st.next_call + size]).outcome == permission_outcome::allow) {
      counted += is_background_launch(st, calls[st.next_call + size]) ? 0 : 1;
      ++size;
    }
  start_calls(self, size);
}

// Runs the `size` calls from next_call at once (their permission already granted).
void run_batch(self_ptr self, size_t size) {
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
      // High priority: a reply's launches are all answered before the supervisor spawns any.
      self->request<caf::message_priority::high>(st.config.agents, caf::infinite,
                                                 execute_atom::value, call)
        .then([=](tool_result& result) { on_batch_result(self, i, std::move(result)); },
              on_error);
    else
      self->request(st.executor, caf::infinite, execute_atom::value, call)
        .then([=](tool_result& result) { on_batch_result(self, i, std::move(result)); },
              on_error);
  }
}

// Native calls come first, then calls written in the text; each gets an id. With native
// tool calling a block in the text is an illustration, never a command.
void collect_calls(step_state& st, message& reply) {
  auto calls = std::move(reply.tool_calls);
  for (auto& call : parse_text_calls(reply.content, st.config.format, *st.config.registry))
    calls.push_back(std::move(call));
  for (size_t i = 0; i < calls.size(); ++i)
    if (calls[i].id.empty())
      calls[i].id = "call_" + reply.id.substr(reply.id.find('_') + 1) + "_" + std::to_string(i);
  reply.tool_calls = std::move(calls);
}

void on_reply(self_ptr self, model_reply& reply);

void generate(self_ptr self, model_request request) {
  self->request(self->state.model, caf::infinite, generate_atom::value, std::move(request))
    .then([=](model_reply& reply) { on_reply(self, reply); },
          [=](caf::error& err) {
            model_reply failed;
            failed.error = model_error_kind::transport;
            failed.error_message = "model client failed: " + self->system().render(err);
            on_reply(self, failed);
          });
}

// A reply that ends at the output limit while it has native calls was cut in its last call
// (a finished call would have ended it with tool_use): that call is dropped, never run
// half-formed. Returns the dropped call's tool name.
std::string drop_cut_call(model_reply& reply) {
  auto& calls = reply.assistant.tool_calls;
  if (calls.empty() || calls.back().format != call_format::native)
    return {};
  auto name = calls.back().name;
  calls.pop_back();
  return name;
}

// Asks the model to go on from where the output limit cut its reply. The request is the
// step's, plus the reply so far (text only: native calls would need their results right
// after them) and an instruction.
void continue_reply(self_ptr self, const std::string& cut_call) {
  auto& st = self->state;
  const auto& so_far = *st.partial;
  auto text_only = std::make_shared<message>();
  text_only->id = so_far.id;
  text_only->role = role::assistant;
  text_only->content = so_far.content;
  std::string ask =
    "Your reply was cut off because it reached the output token limit. Continue exactly where "
    "it stopped: do not repeat what you already wrote and do not apologise or recap; if the "
    "cut fell inside a word, a code block or a tool call, complete it.";
  if (!so_far.tool_calls.empty()) {
    std::string names;
    for (auto& call : so_far.tool_calls)
      names += (names.empty() ? "" : ", ") + call.name;
    ask += " The tool calls you already made (" + names +
           ") stand and will run; do not make them again.";
  }
  if (!cut_call.empty())
    ask += " The call to the " + cut_call +
           " tool you were writing was cut before its input was complete and was not run: "
           "make that call again, in full.";
  auto next = st.request;
  next.context.messages.push_back(std::move(text_only));
  auto prompt = std::make_shared<message>();
  prompt->role = role::user;
  prompt->origin = "continuation";
  prompt->content = std::move(ask);
  next.context.messages.push_back(std::move(prompt));
  generate(self, std::move(next));
}

// Adds a piece of a cut reply to the pieces before it: texts concatenated, calls in order.
void join(std::optional<message>& partial, message piece) {
  if (!partial) {
    partial = std::move(piece);
    return;
  }
  partial->content += piece.content;
  for (auto& call : piece.tool_calls)
    partial->tool_calls.push_back(std::move(call));
}

void on_reply(self_ptr self, model_reply& reply) {
  auto& st = self->state;
  st.outcome.usage += reply.usage;
  if (reply.error == model_error_kind::interrupted || (st.interrupted && !reply.ok())) {
    st.partial.reset();
    finish(self, step_status::interrupted);
    return;
  }
  if (!reply.ok()) {
    st.partial.reset();
    st.outcome.error = reply.error;
    st.outcome.error_message = reply.error_message;
    finish(self, step_status::failed);
    return;
  }
  if (reply.stop_reason == "max_tokens" || st.partial) {
    bool cut = reply.stop_reason == "max_tokens";
    auto cut_call = cut ? drop_cut_call(reply) : std::string{};
    join(st.partial, std::move(reply.assistant));
    if (cut && st.outcome.continuations < max_continuations && !st.interrupted) {
      ++st.outcome.continuations;
      continue_reply(self, cut_call);
      return;
    }
    st.outcome.unfinished_call = cut_call;
    reply.assistant = std::move(*st.partial);
    st.partial.reset();
  }
  auto& msg = reply.assistant;
  msg.role = role::assistant;
  if (msg.id.empty())
    msg.id = new_message_id();
  if (msg.timestamp_ms == 0)
    msg.timestamp_ms = now_ms();
  collect_calls(st, msg);
  st.outcome.reply = msg;
  st.next_call = 0;
  st.phase = step_phase::running_tools;
  // No tool runs before the session has the reply on disk and its hooks have seen it.
  self->request(st.session, caf::infinite, reply_atom::value, std::move(msg))
    .then(
      [=](bool proceed) {
        if (!proceed)
          self->state.interrupted = true;
        run_next_call(self);
      },
      [=](caf::error&) {
        self->state.interrupted = true;
        run_next_call(self);
      });
}

step_actor::behavior_type step_behavior(self_ptr self, step_config config, session_actor session,
                                        model_client_actor model, tool_executor_actor executor) {
  auto& st = self->state;
  st.tools = config.registry->descriptors();
  st.config = std::move(config);
  if (st.config.permissions)
    st.permissions = *st.config.permissions;
  st.session = std::move(session);
  st.model = std::move(model);
  st.executor = std::move(executor);
  return {
    [=](step_atom, step_request& request) -> caf::result<step_outcome> {
      auto& s = self->state;
      if (s.phase != step_phase::idle) {
        step_outcome busy;
        busy.status = step_status::failed;
        busy.error = model_error_kind::request;
        busy.error_message = "a step is already running for this session";
        return busy;
      }
      s.promise = self->make_response_promise<step_outcome>();
      s.outcome = step_outcome{};
      s.interrupted = false;
      s.partial.reset();
      s.call_notes.clear();
      s.phase = step_phase::generating;
      s.request = model_request{s.config.system_prompt, std::move(request.context), s.tools};
      generate(self, s.request);
      return s.promise;
    },
    [=](compact_atom, model_request& request) -> caf::result<model_reply> {
      auto& s = self->state;
      if (s.phase != step_phase::idle) {
        model_reply busy;
        busy.error = model_error_kind::request;
        busy.error_message = "cannot compact while a step is running";
        return busy;
      }
      s.phase = step_phase::compacting;
      s.interrupted = false;
      s.compaction = self->make_response_promise<model_reply>();
      auto deliver = [=](model_reply reply) {
        auto& state = self->state;
        state.phase = step_phase::idle;
        state.compaction.deliver(std::move(reply));
      };
      self->request(s.model, caf::infinite, generate_atom::value, std::move(request))
        .then([=](model_reply& reply) { deliver(std::move(reply)); },
              [=](caf::error& err) {
                model_reply failed;
                failed.error = model_error_kind::transport;
                failed.error_message = "model client failed: " + self->system().render(err);
                deliver(std::move(failed));
              });
      return s.compaction;
    },
    [=](interrupt_atom) {
      auto& s = self->state;
      if (s.phase == step_phase::idle)
        return;
      s.interrupted = true;
      if (s.asking) {
        // Nobody waits for the answer: the call and the rest are answered as interrupted.
        s.asking = false;
        run_next_call(self);
        return;
      }
      if (s.hooking) {
        // Hooks around a call are not waited for: results in hand are logged as they are, the
        // rest answered as interrupted.
        s.hooking = false;
        if (s.batch.empty() || s.batch_pending > 0)
          run_next_call(self);
        else
          log_batch(self);
        return;
      }
      // Normal priority on purpose: a cancel must not overtake the request it cancels.
      if (s.phase == step_phase::generating || s.phase == step_phase::compacting)
        self->send(s.model, cancel_atom::value);
      else
        self->send(s.executor, cancel_atom::value);
    },
    [=](generation_progress& progress) {
      // A summary being written is not the assistant speaking: only retries are shown.
      if (self->state.phase == step_phase::compacting && progress.kind == progress_kind::text_delta)
        return;
      self->send(self->state.session, std::move(progress));
    },
  };
}

} // namespace

step_actor spawn_step(caf::actor_system& sys, step_config config, session_actor session,
                      model_client_actor model, tool_executor_actor executor) {
  return sys.spawn(step_behavior, std::move(config), std::move(session), std::move(model),
                   std::move(executor));
}

} // namespace troupe
