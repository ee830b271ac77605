// The session's step loop: a step sent to the step actor (after StepPre, compacting first when
// the context is full), what its outcome means (a tool round, a structural stop, the step cap,
// a failure and the one reactive compaction), the reply's GenerationPost, and interrupts.

#include <algorithm>
#include <functional>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include "store/ids.hpp"
#include "actors/session_state.hpp"
#include "context/compaction.hpp"
#include "tools/tool_spec.hpp"

namespace troupe {

namespace {

void send_step(session_ptr self, bool may_compact);

// Applies what successful calls of the todo and complete tools change in the loop. Returns
// the summary when the model called complete.
std::optional<std::string> apply_loop_effects(session_ptr self, const step_outcome& outcome) {
  auto& st = self->state;
  std::optional<std::string> summary;
  for (auto& result : outcome.tool_messages) {
    const auto* spec = st.config().registry->find(result.tool_name);
    if (spec == nullptr || result.is_error || spec->effect == loop_effect::none)
      continue;
    if (spec->effect == loop_effect::complete) {
      summary = result.content;
      continue;
    }
    for (auto& call : outcome.reply.tool_calls)
      if (call.id == result.tool_call_id) {
        st.state.todos = call.input.at("todos");
        publish_notice(self, "todos", result.content);
      }
  }
  return summary;
}

// A prompt the provider refused as too long gets one reactive compaction and the same step
// again; any other failure, or a second refusal, ends the run.
// A failed step ends a headless run `error`. In a chat the person decides: the error is logged
// as a system message and the prompt comes back (the session goes on, /model or /compact may
// help).
void fail_turn(session_ptr self, std::string error, model_error_kind kind) {
  auto& st = self->state;
  if (!st.config().interactive) {
    end_session(self, terminal_reason::error, std::move(error), kind);
    return;
  }
  note_turn_end(self, terminal_reason::error, error, kind);
  message note;
  note.role = role::system;
  note.origin = message_origin::error;
  note.content = "The turn stopped: " + error;
  if (!append_message(self, std::move(note)))
    return;
  save_state(self);
  fire_and_enqueue(self, hook_point::turn_post);
  next_turn(self);
}

// The step failed because the model is overloaded or rate-limited (its retries spent): with a
// fallback model not yet in use, the same step again on it. False when there is none.
bool step_again_on_fallback(session_ptr self, const step_outcome& outcome) {
  auto& st = self->state;
  const auto& fallback = st.config().fallback_model;
  if (fallback.empty() || st.current_model.name == fallback ||
      (outcome.error != model_error_kind::server &&
       outcome.error != model_error_kind::rate_limited))
    return false;
  auto failed = st.current_model.name;
  auto problem = change_model(self, fallback,
                              "The model " + failed + " failed (" + outcome.error_message +
                                "); the fallback model " + fallback + " goes on from here.");
  if (!problem.empty()) {
    spdlog::warn("session {}: cannot switch to the fallback model {}: {}",
                 st.config().session_id, fallback, problem);
    return false;
  }
  publish_notice(self, "model_fallback",
                 failed + " failed (" + outcome.error_message + "); going on with " + fallback);
  send_step(self, false);
  return true;
}

void on_step_failed(session_ptr self, const step_outcome& outcome, bool interrupted) {
  auto& st = self->state;
  st.state.transition = transition_reason::model_error;
  if (!interrupted && step_again_on_fallback(self, outcome))
    return;
  if (outcome.error != model_error_kind::prompt_too_long) {
    fail_turn(self, outcome.error_message, outcome.error);
    return;
  }
  if (st.state.has_attempted_reactive_compact) {
    fail_turn(self,
              "the conversation is still too long for the model's context window after a "
              "compaction (" +
                  outcome.error_message + "); start a new session or lower what the tools return",
              outcome.error);
    return;
  }
  if (auto_compaction_off(st)) {
    fail_turn(self,
              "the conversation is too long for the model's context window and "
              "auto-compaction is off after " +
                  std::to_string(compaction_breaker) + " failed compactions (" +
                  outcome.error_message + ")",
              outcome.error);
    return;
  }
  st.state.has_attempted_reactive_compact = true;
  save_state(self);
  bool started = compact(self, compaction_trigger{"auto", true, ""},
                         compaction_next{compaction_next::kind::step_again, outcome.error_message});
  if (!started)
    fail_turn(self,
              "the conversation is too long for the model's context window (" +
                outcome.error_message + ") and there is nothing left to compact",
              outcome.error);
}

void on_step_done(session_ptr self, step_outcome& outcome) {
  auto& st = self->state;
  if (st.phase == session_phase::ended)
    return;
  count_usage(self, outcome.usage);
  st.api_ms += outcome.api_ms;
  for (auto& result : outcome.tool_messages)
    if (!append_message(self, result))
      return;
  st.permission_denials.insert(st.permission_denials.end(), outcome.denials.begin(),
                               outcome.denials.end());
  if (outcome.hook_stopped) {
    stop_for_hook(self, outcome.stop_event, outcome.stop_reason);
    return;
  }
  if (!outcome.reply.tool_calls.empty())
    // Plan mode's refusals are not: the model is to present its plan, which ends the run.
    st.turn.last_tool_step_denied =
      std::any_of(outcome.denials.begin(), outcome.denials.end(),
                  [](const permission_denial& d) { return d.cause != denial_cause::plan_mode; });
  // An interrupt that raced with the step's end still stops the loop here.
  bool requested = take_interrupt_request(self);
  bool interrupted = outcome.status == step_status::interrupted || requested;
  if (outcome.status == step_status::failed) {
    on_step_failed(self, outcome, requested);
    return;
  }
  if (interrupted) {
    stop_turn_interrupted(self, outcome.declined);
    return;
  }
  st.state.has_attempted_reactive_compact = false;
  st.state.max_output_recovery_count = outcome.continuations;
  if (outcome.continuations == 0)
    st.window.calibrate(st.sent_estimate, outcome.usage.input_tokens +
                                              outcome.usage.cache_read_tokens +
                                              outcome.usage.cache_write_tokens);
  if (!outcome.unfinished_call.empty()) {
    message note;
    note.role = role::system;
    note.origin = message_origin::max_output;
    note.content =
        "The reply was cut at the output token limit " + std::to_string(outcome.continuations + 1) +
        " times; its unfinished call to the " + outcome.unfinished_call + " tool was not run.";
    if (!append_message(self, std::move(note)))
      return;
  }
  if (auto summary = apply_loop_effects(self, outcome)) {
    // The model declared the task done: its summary is the run's answer.
    st.last_assistant_text = std::move(*summary);
    st.state.transition = transition_reason::completed;
    save_state(self);
    bool goes_on = st.config().interactive || st.config().wait_for_notifications;
    end_turn_for_good(self, goes_on ? std::nullopt
                                    : std::optional<terminal_reason>{terminal_reason::completed});
    return;
  }
  st.state.transition = outcome.reply.tool_calls.empty() ? transition_reason::structural_stop
                                                         : transition_reason::tool_round;
  save_state(self);
  if (st.state.transition == transition_reason::structural_stop && st.turn.last_tool_step_denied &&
      !st.config().interactive) {
    // The model gave up after calls were refused: the run is blocked, not done.
    if (!st.permission_denials.empty()) {
      const auto& refused = st.permission_denials.back();
      st.turn.end_cause = refused.tool_name + " was refused: " + refused.reason;
    }
    end_turn_for_good(self, terminal_reason::permission_blocked);
  } else if (st.state.transition == transition_reason::structural_stop) {
    end_turn(self);
  } else {
    run_next_step(self);
  }
}

// Sends the context since the last boundary to the step; when the projected request is past
// the threshold, compacts first (at most once per step, and not once the breaker tripped).
void send_step(session_ptr self, bool may_compact) {
  auto& st = self->state;
  // An interrupt that came while hooks ran between steps stops the turn before the model call.
  if (take_interrupt_request(self)) {
    stop_turn_interrupted(self, false);
    return;
  }
  // Notifications that arrived while the step before ran go in before this model call, and so
  // does what GenerationPost hooks added about its reply.
  if (!log_news(self, st.inbox.take_held()))
    return;
  for (auto& note : std::exchange(st.turn.pending_hook_context, {}))
    if (!append_message(self, std::move(note)))
      return;
  if (may_compact && st.window.over_threshold() && !auto_compaction_off(st) &&
      compact(self, compaction_trigger{"auto", false, ""}, compaction_next{}))
    return;
  st.phase = session_phase::stepping;
  st.sent_estimate = st.window.estimated_tokens();
  spdlog::debug("session {}: step {}: ~{} tokens projected ({} messages, {} results elided; "
                "compaction at {})",
                st.config().session_id, st.state.step_count, st.window.projected_tokens(),
                st.window.size(), st.window.elided_count(), st.window.budget().compact_threshold());
  step_request request{st.window.snapshot(), st.state.step_count};
  if (st.mode_override)
    request.permission_mode = static_cast<int32_t>(*st.mode_override);
  self->request(st.step, caf::infinite, step_atom::value, std::move(request))
      .then([=](step_outcome& outcome) { on_step_done(self, outcome); },
            [=](caf::error& err) {
              end_session(self, terminal_reason::error,
                          "step failed: " + self->system().render(err));
            });
}

// The first reply of an unnamed session: the namer is asked, and the loop goes on without
// waiting for its answer.
void ask_for_name(session_ptr self, const std::string& reply) {
  auto& st = self->state;
  if (!st.config().namer || st.naming || !st.info.name.empty() || st.info.first_prompt.empty())
    return;
  st.naming = true;
  st.name_pending = true;
  auto done = [=](const std::string& name, const token_usage& usage) {
    auto& s = self->state;
    count_usage(self, usage); // the naming call is priced like every other
    bool waited_for = s.name_pending && s.phase == session_phase::ended;
    s.name_pending = false;
    // It may replace the end's fallback from the prompt, never a name the user gave.
    if (!name.empty() && (s.info.name.empty() || s.info.name_source == "prompt")) {
      s.info.name = name;
      s.info.name_source = s.config().namer_uses_model ? "model" : "prompt";
      save_info(self); // no notice: the next status line (and troupe ls) shows it
    }
    if (waited_for)
      end_wait_done(self);
  };
  self->request(st.config().namer, std::chrono::seconds{90}, name_atom::value, st.info.first_prompt,
                reply)
      .then(done, [=](caf::error&) { done({}, {}); });
}

} // namespace

void run_next_step(session_ptr self) {
  auto& st = self->state;
  if (st.config().max_cost_usd > 0 && st.run_cost_usd >= st.config().max_cost_usd) {
    st.turn.end_cause = "reached --max-budget-usd " + format_cost(st.config().max_cost_usd, true) +
                        ": this run has cost " + format_cost(st.run_cost_usd, true);
    save_state(self);
    end_turn_for_good(self, terminal_reason::max_budget);
    return;
  }
  if (st.config().max_steps > 0 && st.state.step_count >= st.config().max_steps) {
    st.state.transition = transition_reason::max_steps;
    message cap;
    cap.role = role::system;
    cap.origin = message_origin::max_steps;
    st.turn.end_cause = "reached the maximum of " + std::to_string(st.config().max_steps) +
                        " steps for this turn";
    cap.content = "Stopped: reached the maximum of " + std::to_string(st.config().max_steps) +
                  " steps for this turn (" +
                  (st.config().depth > 0
                     ? "a subagent's cap is its task's max_steps, or else its parent's --max-steps"
                     : "raise it with --max-steps or TROUPE_MAX_STEPS") +
                  ").";
    if (!append_message(self, std::move(cap)))
      return;
    save_state(self);
    if (st.config().interactive) {
      note_turn_end(self, terminal_reason::max_turns,
                    "reached the maximum of " + std::to_string(st.config().max_steps) +
                      " steps for this turn");
      end_turn(self); // control goes back to the user
      return;
    }
    end_turn_for_good(self, terminal_reason::max_turns);
    return;
  }
  fire_and_enqueue(self, hook_point::step_pre);
  if (has_hooks(st, hook_event::step_pre))
    st.phase = session_phase::hooking;
  run_hooks(
      self, hook_event::step_pre,
      {{"step", st.state.step_count + 1}, {"turn", st.state.turn_count}},
      [=](const hook_outcome& hook) {
        auto& s = self->state;
        if (hook.blocked) {
          message note;
          note.role = role::system;
          note.origin = message_origin::hook_blocked;
          note.content = "A StepPre hook stopped the turn: " + hook.reason;
          if (!append_message(self, std::move(note)))
            return;
          queue_hook_messages(self, hook);
          s.state.transition = transition_reason::structural_stop;
          save_state(self);
          end_turn(self);
          return;
        }
        if (!log_hook_context(self, hook_event::step_pre, hook.additional_context))
          return;
        queue_hook_messages(self, hook);
        s.state.step_count++;
        s.state.total_steps++;
        send_step(self, true);
      },
      hook_wait::step_pre());
}

caf::result<bool> accept_reply(session_ptr self, message reply) {
  auto& st = self->state;
  if (st.phase != session_phase::stepping)
    return false;
  auto text = reply.content;
  // The calls as GenerationPost hooks read them, made only for such hooks: a reply that
  // launches a thousand agents would otherwise copy them all once more.
  bool hooked = has_hooks(st, hook_event::generation_post);
  auto calls = nlohmann::json::array();
  if (hooked)
    for (auto& call : reply.tool_calls)
      calls.push_back({{"id", call.id}, {"name", call.name}, {"input", call.input}});
  if (!append_message(self, std::move(reply)))
    return false;
  ask_for_name(self, text);
  fire_and_enqueue(self, hook_point::generation_post);
  if (!hooked)
    return st.phase == session_phase::stepping && !st.turn.interrupt_requested;
  // The step waits for this answer before any tool runs: the hooks see the reply first.
  auto promise = self->make_response_promise<bool>();
  auto wait = hook_wait::generation_post(promise); // interrupted: no tool runs
  run_hooks(
      self, hook_event::generation_post, {{"reply", text}, {"tool_calls", calls}},
      [=](const hook_outcome& hook) mutable {
        auto& s = self->state;
        if (!hook.additional_context.empty()) {
          auto context = make_input(hook.additional_context, message_origin::hook);
          context.meta = {{"hook_event", hook_event::generation_post}};
          s.turn.pending_hook_context.push_back(std::move(context));
        }
        queue_hook_messages(self, hook);
        promise.deliver(s.phase == session_phase::stepping && !s.turn.interrupt_requested);
      },
      std::move(wait));
  return promise;
}

bool take_interrupt_request(session_ptr self) {
  return std::exchange(self->state.turn.interrupt_requested, false);
}

void interrupt_for_news(session_ptr self) {
  self->state.turn.urgent_pending = true;
  request_interrupt(self);
}

std::string request_interrupt(session_ptr self) {
  auto& st = self->state;
  // Hooks in flight are not waited for. GenerationPost's run while the step waits: the step is
  // interrupted too, below; elsewhere the interrupt's whole effect is what the hooks' site does.
  if (interrupt_hooks(self) && st.phase != session_phase::stepping)
    return "interrupted";
  if (st.phase == session_phase::idle) {
    if (st.config().interactive) {
      // At the prompt an interrupt takes back what was queued, never the session.
      drop_queue(self, "interrupted while idle");
      return "cleared the queue: the session is idle";
    }
    // A headless run waiting (for subagents, for notifications) is stopped: nobody else will.
    end_session(self, terminal_reason::interrupted, "interrupted while waiting");
    return "interrupted: the run ended";
  }
  if (st.phase == session_phase::created) {
    st.turn.interrupt_before_start = true;
    return "interrupted: the session is starting";
  }
  if (st.phase == session_phase::hooking) {
    // Hooks that cannot be abandoned (none so far): the model is not asked after them.
    interrupt_agents(self);
    st.turn.interrupt_requested = true;
    return "interrupted";
  }
  if (st.phase == session_phase::ended && st.waiting_for_agents) {
    // Ended, and waiting for the agents it let finish: an interrupt stops them.
    interrupt_agents(self);
    return "interrupted: stopping the agents left to finish";
  }
  if (st.phase != session_phase::stepping && st.phase != session_phase::compacting)
    return "nothing to interrupt: the session has ended";
  if (st.turn.interrupt_requested)
    return "interrupted";
  interrupt_agents(self);
  st.turn.interrupt_requested = true;
  // Normal priority: a high-priority interrupt could overtake the step request it is meant
  // to stop and reach an idle step, which would then run the whole step.
  self->send(st.step, interrupt_atom::value);
  return "interrupted";
}

void compaction_ended(session_ptr self, const compaction_next& then, compaction_status status,
                      const std::string& why) {
  auto& st = self->state;
  if (st.phase == session_phase::ended)
    return;
  switch (then.what) {
    case compaction_next::kind::step:
      // A failed compaction before a step is no reason to skip it: the context still fits.
      if (status == compaction_status::interrupted)
        stop_turn_interrupted(self, false);
      else
        send_step(self, false);
      break;
    case compaction_next::kind::step_again:
      if (status == compaction_status::done)
        send_step(self, false); // the same step again, on the compacted context
      else if (status == compaction_status::interrupted)
        stop_turn_interrupted(self, false);
      else
        fail_turn(self,
                  "the conversation is too long for the model's context window (" +
                    then.refused + ") and compacting it failed: " + why,
                  model_error_kind::prompt_too_long);
      break;
    case compaction_next::kind::command:
      st.phase = session_phase::idle;
      if (status == compaction_status::interrupted) {
        if (!st.config().interactive) {
          end_session(self, terminal_reason::interrupted);
          return;
        }
        drop_queue(self, "interrupted");
      }
      next_turn(self);
      break;
  }
}

} // namespace troupe
