// The session's loop: turns (inputs from the queue) and steps (until no runnable tool).

#include <algorithm>
#include <functional>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include "actors/ids.hpp"
#include "actors/session_state.hpp"
#include "context/compaction.hpp"
#include "tools/tool_spec.hpp"

namespace troupe {

namespace {

void run_next_step(session_ptr self);
void send_step(session_ptr self, bool may_compact);
void enter_loop(session_ptr self, bool unanswered);
void stop_turn_interrupted(session_ptr self, bool declined);

// The calls of the last assistant message that no tool message answers.
std::vector<tool_call> unanswered_calls(const std::vector<message_ptr>& log) {
  auto last =
      std::find_if(log.rbegin(), log.rend(), [](auto& m) { return m->role == role::assistant; });
  if (last == log.rend())
    return {};
  std::vector<tool_call> open = (*last)->tool_calls;
  for (auto it = last.base(); it != log.end(); ++it)
    if ((*it)->role == role::tool)
      open.erase(std::remove_if(open.begin(), open.end(),
                                [&](auto& c) { return c.id == (*it)->tool_call_id; }),
                 open.end());
  return open;
}

void start_turn(session_ptr self) {
  auto& st = self->state;
  st.state.stop_hook_active = false; // a real turn: a Stop hook may continue it once more
  st.state.turn_count++;
  st.state.step_count = 0;
  st.state.transition = transition_reason::next_turn;
  if (st.state.auto_compact.compacted)
    st.state.auto_compact.turns_since_compact++;
  publish_status(self, true);
  fire_and_enqueue(self, hook_point::turn_pre);
  run_next_step(self);
}

// TURN_POST: the in-process turn.post hooks, then the external Stop hooks.
void run_stop_hooks(session_ptr self, std::function<void(const hook_outcome&)> then,
                    std::function<void()> on_interrupt) {
  auto& st = self->state;
  fire_and_enqueue(self, hook_point::turn_post);
  if (has_hooks(st, "Stop"))
    st.phase = session_phase::hooking;
  run_hooks(self, "Stop",
            {{"stop_hook_active", st.state.stop_hook_active},
             {"last_assistant_message", st.last_assistant_text}},
            std::move(then), false, std::move(on_interrupt));
}

// An interrupt while a finished turn's hooks run: the turn is over whatever they would say; a
// headless run ends `interrupted`, a chat drops what was queued and waits for input.
void after_interrupted_turn(session_ptr self) {
  auto& st = self->state;
  message note;
  note.role = role::system;
  note.origin = "interrupt";
  note.content = "Interrupted by the user.";
  if (!append_message(self, std::move(note)))
    return;
  if (!st.config.interactive) {
    end_session(self, terminal_reason::interrupted);
    return;
  }
  drop_queue(self, "interrupted");
  next_turn(self);
}

// A turn that ended normally: turn.post, then loop.continue (its messages are the next
// inputs), then the next input. Turns cut short by an interrupt or by the step cap of a
// non-interactive run fire turn.post only: the loop does not continue.
//
// External Stop hooks (TURN_POST) may block: the reason becomes the input and the turn goes on,
// once — while stop_hook_active is set a second block is not honoured.
void end_turn(session_ptr self) {
  auto interrupted = [=] { after_interrupted_turn(self); };
  run_stop_hooks(self, [=](const hook_outcome& stop) {
    auto& s = self->state;
    if (stop.blocked && !s.state.stop_hook_active) {
      s.state.stop_hook_active = true;
      if (!log_hook_context(self, "Stop", stop.reason))
        return;
      run_next_step(self); // the same turn goes on, with the reason as its input
      return;
    }
    if (stop.blocked)
      publish_notice(self, "hook_blocked",
                     "a Stop hook blocked again while stop_hook_active was set; the "
                     "turn ends: " +
                         stop.reason);
    queue_hook_messages(self, stop);
    fire_and_enqueue(self, hook_point::loop_continue);
    run_hooks(
      self, "LoopContinue", {{"turn", s.state.turn_count}},
      [=](const hook_outcome& more) {
        queue_hook_messages(self, more);
        next_turn(self);
      },
      false, interrupted);
  }, interrupted);
}

// TURN_POST of a turn that cannot go on (the model called complete, the step cap of a run, a
// run blocked by permissions): Stop hooks run and are told, a block is not honoured.
void end_turn_for_good(session_ptr self, std::function<void()> then) {
  run_stop_hooks(
    self,
    [=](const hook_outcome& stop) {
      if (stop.blocked)
        publish_notice(self, "hook_blocked",
                       "a Stop hook blocked a turn that cannot go on: " + stop.reason);
      queue_hook_messages(self, stop);
      then();
    },
    then); // interrupted: the turn's end was decided already
}

// The input starts a turn, after the external UserPromptSubmit hooks (TURN_PRE). `input` is a
// prompt not logged yet: a hook may block it, and it then never reaches the context. News
// (notifications) is logged before and cannot be blocked.
void submit_turn(session_ptr self, std::optional<message> input, const std::string& prompt) {
  auto& st = self->state;
  if (has_hooks(st, "UserPromptSubmit"))
    st.phase = session_phase::hooking;
  auto origin = input ? input->origin : std::string{"task-notification"};
  // Interrupted while the hooks decide: the prompt was given, so it is logged, and the turn
  // stops there.
  auto interrupted = [=]() mutable {
    if (input && !append_message(self, *input))
      return;
    stop_turn_interrupted(self, false);
  };
  run_hooks(self, "UserPromptSubmit", {{"prompt", prompt}, {"origin", origin}},
            [=, input = std::move(input)](const hook_outcome& hook) mutable {
              auto& s = self->state;
              if (hook.blocked && input) {
                message note;
                note.role = role::system;
                note.origin = "hook_blocked";
                note.content = "A UserPromptSubmit hook blocked the prompt: " + hook.reason;
                note.meta = {{"prompt", prompt}};
                if (!append_message(self, std::move(note)))
                  return;
                queue_hook_messages(self, hook);
                s.phase = session_phase::idle;
                next_turn(self);
                return;
              }
              if (hook.blocked)
                publish_notice(self, "hook_blocked",
                               "a UserPromptSubmit hook cannot hold back task notifications "
                               "(they are in the context already): " +
                                   hook.reason);
              if (input && !append_message(self, std::move(*input)))
                return;
              if (!log_hook_context(self, "UserPromptSubmit", hook.additional_context))
                return;
              queue_hook_messages(self, hook);
              start_turn(self);
            },
            false, interrupted);
}

} // namespace

void go_idle(session_ptr self) {
  auto& st = self->state;
  st.phase = session_phase::idle;
  save_info(self);
  publish_status(self, false);
  if (st.config.idle_timeout.count() > 0) {
    st.idle_serial = ++st.idle_timers;
    self->delayed_send(self, st.config.idle_timeout, due_atom::value, st.idle_serial);
  }
}

namespace {

// The first message of a turn says so: /undo takes the last turn out from there.
void mark_turn_start(message& input) {
  if (!input.meta.is_object())
    input.meta = nlohmann::json::object();
  input.meta["turn_start"] = true;
}

// Logs every notification waiting in the queue, in order: news is delivered as a whole the
// moment a turn starts, never one turn at a time. Returns false once the session has ended.
bool log_queued_notifications(session_ptr self) {
  auto& st = self->state;
  std::deque<message> rest;
  std::vector<message> news;
  for (auto& input : st.queue)
    (input.origin == "task-notification" ? news.emplace_back(std::move(input))
                                         : rest.emplace_back(std::move(input)));
  st.queue = std::move(rest);
  for (auto& note : news)
    if (!append_message(self, std::move(note)))
      return false;
  return true;
}

} // namespace

void next_turn(session_ptr self) {
  auto& st = self->state;
  st.urgent_pending = false;
  st.idle_serial = 0;
  // Notifications that arrived during the turn start the next one, all of them at once.
  if (!st.pending_notifications.empty()) {
    auto news = std::exchange(st.pending_notifications, {});
    mark_turn_start(news.front());
    auto prompt = news.front().content;
    for (auto& note : news)
      if (!append_message(self, std::move(note)))
        return;
    if (!log_queued_notifications(self))
      return;
    submit_turn(self, std::nullopt, prompt);
    return;
  }
  while (st.phase != session_phase::ended) {
    if (st.queue.empty()) {
      // A person, a notification from outside or a background subagent's news will start the
      // next turn.
      if (st.config.interactive || st.config.wait_for_notifications || waiting_for_children(st)) {
        go_idle(self);
        return;
      }
      end_session(self, terminal_reason::completed);
      return;
    }
    auto input = std::move(st.queue.front());
    st.queue.pop_front();
    if (run_command(self, input)) {
      if (st.phase == session_phase::compacting)
        return; // the compaction's end resumes the loop
      continue;
    }
    mark_turn_start(input);
    auto prompt = input.content;
    if (input.origin == "task-notification") {
      if (!append_message(self, std::move(input)) || !log_queued_notifications(self))
        return;
      submit_turn(self, std::nullopt, prompt);
    } else {
      submit_turn(self, std::move(input), prompt);
    }
    return;
  }
}

namespace {

// Applies what successful calls of the todo and complete tools change in the loop. Returns
// the summary when the model called complete.
std::optional<std::string> apply_loop_effects(session_ptr self, const step_outcome& outcome) {
  auto& st = self->state;
  std::optional<std::string> summary;
  for (auto& result : outcome.tool_messages) {
    const auto* spec = st.config.registry->find(result.tool_name);
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

// The turn stops here: a system note says why, turn.post fires, and control goes back to the
// user (interactive) or the run ends.
void stop_turn_interrupted(session_ptr self, bool declined) {
  auto& st = self->state;
  st.state.transition = transition_reason::interrupted;
  message note;
  note.role = role::system;
  note.content = declined            ? "Stopped: the user declined a tool call."
                 : st.urgent_pending ? "Interrupted by an urgent notification."
                                     : "Interrupted by the user.";
  note.origin = declined ? "declined" : "interrupt";
  if (!append_message(self, std::move(note)))
    return;
  save_state(self);
  fire_and_enqueue(self, hook_point::turn_post);
  if (st.urgent_pending && !declined) {
    next_turn(self); // an urgent notification interrupted the step: it starts the next turn
    return;
  }
  if (!st.config.interactive) {
    end_session(self,
                declined ? terminal_reason::permission_blocked : terminal_reason::interrupted);
    return;
  }
  drop_queue(self, "interrupted"); // the user stopped the work queued behind this turn too
  next_turn(self);
}

// A prompt the provider refused as too long gets one reactive compaction and the same step
// again; any other failure, or a second refusal, ends the run.
// A failed step ends a headless run `error`. In a chat the person decides: the error is logged
// as a system message and the prompt comes back (the session goes on, /model or /compact may
// help).
void fail_turn(session_ptr self, std::string error, model_error_kind kind) {
  auto& st = self->state;
  if (!st.config.interactive) {
    end_session(self, terminal_reason::error, std::move(error), kind);
    return;
  }
  message note;
  note.role = role::system;
  note.origin = "error";
  note.content = "The turn stopped: " + error;
  if (!append_message(self, std::move(note)))
    return;
  save_state(self);
  fire_and_enqueue(self, hook_point::turn_post);
  next_turn(self);
}

void on_step_failed(session_ptr self, const step_outcome& outcome) {
  auto& st = self->state;
  st.state.transition = transition_reason::model_error;
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
  auto refused = outcome.error_message;
  bool started =
      compact(self, compaction_trigger{"auto", true, ""},
              [=](compaction_status status, const std::string& why) {
                auto& s = self->state;
                if (s.phase == session_phase::ended)
                  return;
                if (status == compaction_status::done) {
                  send_step(self, false); // the same step again, on the compacted context
                } else if (status == compaction_status::interrupted) {
                  stop_turn_interrupted(self, false);
                } else {
                  fail_turn(self,
                              "the conversation is too long for the model's context window (" +
                                  refused + ") and compacting it failed: " + why,
                              model_error_kind::prompt_too_long);
                }
              });
  if (!started)
    fail_turn(self,
                "the conversation is too long for the model's context window (" + refused +
                    ") and there is nothing left to compact",
                outcome.error);
}

void on_step_done(session_ptr self, step_outcome& outcome) {
  auto& st = self->state;
  if (st.phase == session_phase::ended)
    return;
  count_usage(self, outcome.usage);
  for (auto& result : outcome.tool_messages)
    if (!append_message(self, result))
      return;
  st.permission_denials.insert(st.permission_denials.end(), outcome.denials.begin(),
                               outcome.denials.end());
  if (!outcome.reply.tool_calls.empty())
    st.last_tool_step_denied = !outcome.denials.empty();
  // An interrupt that raced with the step's end still stops the loop here.
  bool interrupted = outcome.status == step_status::interrupted || st.interrupt_requested;
  st.interrupt_requested = false;
  if (outcome.status == step_status::failed) {
    on_step_failed(self, outcome);
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
    note.origin = "max_output";
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
    end_turn_for_good(self, [=] {
      auto& s = self->state;
      if (s.config.interactive || s.config.wait_for_notifications)
        next_turn(self);
      else
        end_session(self, terminal_reason::completed);
    });
    return;
  }
  st.state.transition = outcome.reply.tool_calls.empty() ? transition_reason::structural_stop
                                                         : transition_reason::tool_round;
  save_state(self);
  if (st.state.transition == transition_reason::structural_stop && st.last_tool_step_denied &&
      !st.config.interactive) {
    // The model gave up after calls were refused: the run is blocked, not done.
    end_turn_for_good(self, [=] { end_session(self, terminal_reason::permission_blocked); });
  } else if (st.state.transition == transition_reason::structural_stop) {
    end_turn(self);
  } else {
    run_next_step(self);
  }
}

void run_next_step(session_ptr self) {
  auto& st = self->state;
  if (st.config.max_steps > 0 && st.state.step_count >= st.config.max_steps) {
    st.state.transition = transition_reason::max_steps;
    message cap;
    cap.role = role::system;
    cap.origin = "max_steps";
    cap.content = "Stopped: reached the maximum of " + std::to_string(st.config.max_steps) +
                  " steps for this turn (raise it with --max-steps or TROUPE_MAX_STEPS).";
    if (!append_message(self, std::move(cap)))
      return;
    save_state(self);
    if (st.config.interactive) {
      end_turn(self); // control goes back to the user
      return;
    }
    end_turn_for_good(self, [=] { end_session(self, terminal_reason::max_turns); });
    return;
  }
  fire_and_enqueue(self, hook_point::step_pre);
  if (has_hooks(st, "StepPre"))
    st.phase = session_phase::hooking;
  run_hooks(self, "StepPre", {{"step", st.state.step_count + 1}, {"turn", st.state.turn_count}},
            [=](const hook_outcome& hook) {
              auto& s = self->state;
              if (hook.blocked) {
                message note;
                note.role = role::system;
                note.origin = "hook_blocked";
                note.content = "A StepPre hook stopped the turn: " + hook.reason;
                if (!append_message(self, std::move(note)))
                  return;
                queue_hook_messages(self, hook);
                s.state.transition = transition_reason::structural_stop;
                save_state(self);
                end_turn(self);
                return;
              }
              if (!log_hook_context(self, "StepPre", hook.additional_context))
                return;
              queue_hook_messages(self, hook);
              s.state.step_count++;
              s.state.total_steps++;
              send_step(self, true);
            },
            false, [=] { stop_turn_interrupted(self, false); });
}

// Sends the context since the last boundary to the step; when the projected request is past
// the threshold, compacts first (at most once per step, and not once the breaker tripped).
void send_step(session_ptr self, bool may_compact) {
  auto& st = self->state;
  // An interrupt that came while hooks ran between steps stops the turn before the model call.
  if (std::exchange(st.interrupt_requested, false)) {
    stop_turn_interrupted(self, false);
    return;
  }
  // Notifications that arrived while the step before ran go in before this model call, and so
  // does what GenerationPost hooks added about its reply.
  for (auto* waiting : {&st.pending_notifications, &st.pending_hook_context})
    for (auto& note : std::exchange(*waiting, {}))
      if (!append_message(self, std::move(note)))
        return;
  if (may_compact && st.window.over_threshold() && !auto_compaction_off(st) &&
      compact(self, compaction_trigger{"auto", false, ""},
              [=](compaction_status status, const std::string&) {
                if (self->state.phase == session_phase::ended)
                  return;
                if (status == compaction_status::interrupted)
                  stop_turn_interrupted(self, false);
                else
                  send_step(self, false);
              }))
    return;
  st.phase = session_phase::stepping;
  st.sent_estimate = st.window.estimated_tokens();
  spdlog::debug("session {}: step {}: ~{} tokens projected ({} messages, {} results elided; "
                "compaction at {})",
                st.config.session_id, st.state.step_count, st.window.projected_tokens(),
                st.window.size(), st.window.elided_count(), st.window.budget().compact_threshold());
  step_request request{st.window.snapshot(), st.state.step_count};
  self->request(st.step, caf::infinite, step_atom::value, std::move(request))
      .then([=](step_outcome& outcome) { on_step_done(self, outcome); },
            [=](caf::error& err) {
              end_session(self, terminal_reason::error,
                          "step failed: " + self->system().render(err));
            });
}

} // namespace

void begin_session(session_ptr self) {
  auto& st = self->state;
  if (st.begun)
    return;
  st.begun = true;
  auto transcript_path = st.config.session_dir / "transcript.jsonl";
  auto writer = transcript_writer::open(transcript_path);
  st.window = context_window{st.config.budget};
  auto fixed = estimate_tokens(st.config.system_prompt);
  if (st.config.format == tool_format::tool)
    fixed += estimate_tokens(st.config.registry->descriptors());
  st.window.set_fixed_tokens(fixed);
  // The whole transcript is kept; the model is sent what follows its last boundary.
  for (auto& m : st.config.history) {
    st.log.push_back(std::make_shared<const message>(std::move(m)));
    st.window.append(st.log.back());
  }
  st.config.history.clear();
  if (st.config.resumed_state) {
    st.state = *st.config.resumed_state;
    st.state.step_count = 0;
  }
  st.state.messages_count = static_cast<int64_t>(st.log.size());
  for (auto it = st.log.rbegin(); it != st.log.rend(); ++it)
    if ((*it)->role == role::assistant) {
      st.last_assistant_text = (*it)->content;
      break;
    }
  publish(self,
          session_started_event{st.config.session_id, st.config.cwd.string(), st.config.model_name,
                                st.config.registry->names(), transcript_path.string(),
                                static_cast<int64_t>(st.log.size())});
  auto state_file = json_file::open(st.config.session_dir / "state.json");
  auto info_file = json_file::open(st.config.session_dir / "session.json");
  if (!writer || !state_file || !info_file) {
    end_session(self, terminal_reason::error,
                !writer       ? writer.error()
                : !state_file ? state_file.error()
                              : info_file.error());
    return;
  }
  st.transcript = std::move(*writer);
  st.state_file = std::move(*state_file);
  st.info_file = std::move(*info_file);
  st.info = st.config.info;
  st.info.id = st.config.session_id;
  st.info.cwd = st.config.cwd.string();
  st.info.state = "running";
  if (st.info.created_ms == 0)
    st.info.created_ms = now_ms();
  // A session that died in its first turn never had its info written: its transcript tells.
  if (st.info.first_prompt.empty())
    for (auto& m : st.log)
      if (m->role == role::user && m->origin == "prompt") {
        st.info.first_prompt = m->content.substr(0, 200);
        break;
      }
  save_info(self);
  save_state(self); // never an empty state.json, even if the process dies before a step
  for (auto& m : st.log)
    if (m->origin == "task-notification")
      st.notification_ids.insert(m->id);
  for (auto& m : fire(self, hook_point::session_start))
    if (!append_message(self, std::move(m)))
      return;
  // Crash recovery: calls of the last reply that never got a result are answered as lost
  // (a provider rejects an unanswered call), and a transcript ending with the user's message
  // or with tool results is answered before any new input.
  for (auto& lost : unanswered_calls(st.log))
    if (!append_message(self,
                        make_tool_message(lost, error_result("[no result: the session stopped "
                                                             "before this call finished]"))))
      return;
  auto last = std::find_if(st.log.rbegin(), st.log.rend(),
                           [](const message_ptr& m) { return !is_bookkeeping(*m); });
  bool unanswered = last != st.log.rend() && awaits_answer(**last);
  // External SessionStart hooks add their context first (it is not a message to answer).
  // Until they and the durable queue are done, the session stays `created`: inputs and news
  // queue up.
  run_hooks(self, "SessionStart", {{"source", st.log.empty() ? "startup" : "resume"}},
            [=](const hook_outcome& hook) {
              if (!log_hook_context(self, "SessionStart", hook.additional_context))
                return;
              queue_hook_messages(self, hook);
              enter_loop(self, unanswered);
            },
            false,
            [=] {
              self->state.interrupt_before_start = true; // stops the turn it would start
              enter_loop(self, unanswered);
            });
}

namespace {

// Reads what waits in the durable queue, then takes the first input of the session.
void enter_loop(session_ptr self, bool unanswered) {
  // Notifications that came while the session was not running are inputs like any other, read
  // first.
  read_durable_queue(self, true, [=](size_t) {
    auto& s = self->state;
    if (s.phase != session_phase::created)
      return; // ended meanwhile
    s.phase = session_phase::idle;
    bool news_first = !s.queue.empty() && s.queue.front().origin == "task-notification";
    if (unanswered && !news_first)
      start_turn(self); // the turn the process died in is answered before any new input
    else
      next_turn(self); // news starts the turn; an unanswered message is in its context too
    // An interrupt that came while the session was starting stops what it started.
    if (std::exchange(s.interrupt_before_start, false) && s.phase != session_phase::ended)
      request_interrupt(self);
  });
}

} // namespace

void enqueue_first(session_ptr self, message input) {
  auto& st = self->state;
  st.queue.push_front(std::move(input));
  if (st.phase == session_phase::idle)
    next_turn(self);
}

void accept_input(session_ptr self, message input) {
  auto& st = self->state;
  if (st.phase == session_phase::ended)
    return;
  if (input.id.empty())
    input.id = new_message_id();
  enqueue(self, std::move(input));
  if (st.phase == session_phase::idle)
    next_turn(self);
}

namespace {

// The first reply of an unnamed session: the namer is asked, and the loop goes on without
// waiting for its answer.
void ask_for_name(session_ptr self, const std::string& reply) {
  auto& st = self->state;
  if (!st.config.namer || st.naming || !st.info.name.empty() || st.info.first_prompt.empty())
    return;
  st.naming = true;
  st.name_pending = true;
  auto done = [=](const std::string& name) {
    auto& s = self->state;
    bool waited_for = s.name_pending && s.phase == session_phase::ended;
    s.name_pending = false;
    // It may replace the end's fallback from the prompt, never a name the user gave.
    if (!name.empty() && (s.info.name.empty() || s.info.name_source == "prompt")) {
      s.info.name = name;
      s.info.name_source = s.config.namer_uses_model ? "model" : "prompt";
      save_info(self); // no notice: the next status line (and troupe ls) shows it
    }
    if (waited_for)
      end_wait_done(self);
  };
  self->request(st.config.namer, std::chrono::seconds{90}, name_atom::value, st.info.first_prompt,
                reply)
      .then(done, [=](caf::error&) { done({}); });
}

} // namespace

caf::result<bool> accept_reply(session_ptr self, message reply) {
  auto& st = self->state;
  if (st.phase != session_phase::stepping)
    return false;
  auto text = reply.content;
  auto calls = nlohmann::json::array();
  for (auto& call : reply.tool_calls)
    calls.push_back({{"id", call.id}, {"name", call.name}, {"input", call.input}});
  if (!append_message(self, std::move(reply)))
    return false;
  ask_for_name(self, text);
  fire_and_enqueue(self, hook_point::generation_post);
  if (!has_hooks(st, "GenerationPost"))
    return st.phase == session_phase::stepping && !st.interrupt_requested;
  // The step waits for this answer before any tool runs: the hooks see the reply first.
  auto promise = self->make_response_promise<bool>();
  run_hooks(self, "GenerationPost", {{"reply", text}, {"tool_calls", calls}},
            [=](const hook_outcome& hook) mutable {
              auto& s = self->state;
              if (!hook.additional_context.empty()) {
                auto context = make_input(hook.additional_context, "hook");
                context.meta = {{"hook_event", "GenerationPost"}};
                s.pending_hook_context.push_back(std::move(context));
              }
              queue_hook_messages(self, hook);
              promise.deliver(s.phase == session_phase::stepping && !s.interrupt_requested);
            },
            false, [=]() mutable { promise.deliver(false); }); // interrupted: no tool runs
  return promise;
}

std::string request_interrupt(session_ptr self) {
  auto& st = self->state;
  // Hooks in flight are not waited for. GenerationPost's run while the step waits: the step is
  // interrupted too, below; elsewhere the interrupt's whole effect is what the hooks' site does.
  if (interrupt_hooks(self) && st.phase != session_phase::stepping)
    return "interrupted";
  if (st.phase == session_phase::idle) {
    if (st.config.interactive) {
      // At the prompt an interrupt takes back what was queued, never the session.
      drop_queue(self, "interrupted while idle");
      return "cleared the queue: the session is idle";
    }
    // A headless run waiting (for subagents, for notifications) is stopped: nobody else will.
    end_session(self, terminal_reason::interrupted, "interrupted while waiting");
    return "interrupted: the run ended";
  }
  if (st.phase == session_phase::created) {
    st.interrupt_before_start = true;
    return "interrupted: the session is starting";
  }
  if (st.phase == session_phase::hooking) {
    // Hooks that cannot be abandoned (none so far): the model is not asked after them.
    interrupt_foreground_children(self);
    st.interrupt_requested = true;
    return "interrupted";
  }
  if (st.phase != session_phase::stepping && st.phase != session_phase::compacting)
    return "nothing to interrupt: the session has ended";
  if (st.interrupt_requested)
    return "interrupted";
  interrupt_foreground_children(self);
  st.interrupt_requested = true;
  // Normal priority: a high-priority interrupt could overtake the step request it is meant
  // to stop and reach an idle step, which would then run the whole step.
  self->send(st.step, interrupt_atom::value);
  return "interrupted";
}

} // namespace troupe
