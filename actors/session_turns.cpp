// The session's turn loop: the next input (a slash command, news, a prompt), TURN_PRE and
// TURN_POST with their hooks, and how a turn ends (done, cut short, interrupted).

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

// TURN_POST: the in-process turn.post hooks, then the external Stop hooks.
void run_stop_hooks(session_ptr self, std::function<void(const hook_outcome&)> then,
                    hook_wait wait) {
  auto& st = self->state;
  fire_and_enqueue(self, hook_point::turn_post);
  if (has_hooks(st, hook_event::stop))
    st.phase = session_phase::hooking;
  run_hooks(self, hook_event::stop,
            {{"stop_hook_active", st.state.stop_hook_active},
             {"last_assistant_message", st.last_assistant_text}},
            std::move(then), std::move(wait));
}

// The input starts a turn, after the external UserPromptSubmit hooks (TURN_PRE). `input` is a
// prompt not logged yet: a hook may block it, and it then never reaches the context. News
// (notifications) is logged before and cannot be blocked.
void submit_turn(session_ptr self, std::optional<message> input, const std::string& prompt) {
  auto& st = self->state;
  if (has_hooks(st, hook_event::user_prompt_submit))
    st.phase = session_phase::hooking;
  auto origin = to_string(input ? input->origin : message_origin::task_notification);
  // Interrupted while the hooks decide: the prompt is logged, and the turn stops there.
  auto wait = hook_wait::prompt_submit(input);
  run_hooks(
      self, hook_event::user_prompt_submit, {{"prompt", prompt}, {"origin", origin}},
      [=, input = std::move(input)](const hook_outcome& hook) mutable {
        auto& s = self->state;
        if (hook.blocked && input) {
          message note;
          note.role = role::system;
          note.origin = message_origin::hook_blocked;
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
        if (!log_hook_context(self, hook_event::user_prompt_submit, hook.additional_context))
          return;
        queue_hook_messages(self, hook);
        start_turn(self);
      },
      std::move(wait));
}

// The first message of a turn says so: /undo takes the last turn out from there.
void mark_turn_start(message& input) {
  if (!input.meta.is_object())
    input.meta = nlohmann::json::object();
  input.meta["turn_start"] = true;
}

// A turn starts with news: all of it is logged (within the budget), then the turn's hooks.
void start_news_turn(session_ptr self, std::vector<message> news) {
  self->state.last_news_turn = std::chrono::steady_clock::now();
  mark_turn_start(news.front());
  auto prompt = news.front().content;
  if (!log_news(self, std::move(news)))
    return;
  submit_turn(self, std::nullopt, prompt);
}

} // namespace

void start_turn(session_ptr self) {
  auto& st = self->state;
  st.state.stop_hook_active = false; // a real turn: a Stop hook may continue it once more
  st.state.turn_count++;
  st.state.step_count = 0;
  st.state.transition = transition_reason::next_turn;
  session_state::turn_record record;
  record.steps = st.state.total_steps;
  st.open_turn = record;
  if (st.state.auto_compact.compacted)
    st.state.auto_compact.turns_since_compact++;
  publish_status(self, true);
  fire_and_enqueue(self, hook_point::turn_pre);
  run_next_step(self);
}

// A turn that ended normally: turn.post, then loop.continue (its messages are the next
// inputs), then the next input. Turns cut short by an interrupt or by the step cap of a
// non-interactive run fire turn.post only: the loop does not continue.
//
// External Stop hooks (TURN_POST) may block: the reason becomes the input and the turn goes on,
// once — while stop_hook_active is set a second block is not honoured.
void end_turn(session_ptr self) {
  run_stop_hooks(
      self,
      [=](const hook_outcome& stop) {
        auto& s = self->state;
        if (stop.blocked && !s.state.stop_hook_active) {
          s.state.stop_hook_active = true;
          if (!log_hook_context(self, hook_event::stop, stop.reason))
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
        if (s.config().depth > 0 && !s.last_assistant_text.empty())
          s.turn_answers.push_back(s.last_assistant_text);
        fire_and_enqueue(self, hook_point::loop_continue);
        run_hooks(
            self, hook_event::loop_continue, {{"turn", s.state.turn_count}},
            [=](const hook_outcome& more) {
              queue_hook_messages(self, more);
              next_turn(self);
            },
            hook_wait::finished_turn());
      },
      hook_wait::finished_turn());
}

// TURN_POST of a turn that cannot go on (the model called complete, the step cap of a run, a
// run blocked by permissions): Stop hooks run and are told, a block is not honoured.
void end_turn_for_good(session_ptr self, std::optional<terminal_reason> end) {
  run_stop_hooks(
      self,
      [=](const hook_outcome& stop) {
        if (stop.blocked)
          publish_notice(self, "hook_blocked",
                         "a Stop hook blocked a turn that cannot go on: " + stop.reason);
        queue_hook_messages(self, stop);
        after_final_turn(self, end);
      },
      hook_wait::final_stop(end)); // interrupted: the turn's end was decided already
}

void after_final_turn(session_ptr self, std::optional<terminal_reason> end) {
  if (end && *end == terminal_reason::max_budget)
    end_session(self, *end, self->state.turn.end_cause); // the result's error says the cap
  else if (end)
    end_session(self, *end);
  else
    next_turn(self);
}

void after_interrupted_turn(session_ptr self) {
  auto& st = self->state;
  message note;
  note.role = role::system;
  note.origin = message_origin::interrupt;
  note.content = "Interrupted by the user.";
  if (!append_message(self, std::move(note)))
    return;
  if (!st.config().interactive) {
    end_session(self, terminal_reason::interrupted);
    return;
  }
  note_turn_end(self, terminal_reason::interrupted, "interrupted");
  drop_queue(self, "interrupted");
  next_turn(self);
}

// The turn stops here: a system note says why, turn.post fires, and control goes back to the
// user (interactive) or the run ends.
void stop_turn_interrupted(session_ptr self, bool declined) {
  auto& st = self->state;
  st.state.transition = transition_reason::interrupted;
  message note;
  note.role = role::system;
  note.content = declined                 ? "Stopped: the user declined a tool call."
                 : st.turn.urgent_pending ? "Interrupted by an urgent notification."
                                          : "Interrupted by the user.";
  note.origin = declined ? message_origin::declined : message_origin::interrupt;
  if (!append_message(self, std::move(note)))
    return;
  save_state(self);
  fire_and_enqueue(self, hook_point::turn_post);
  if (st.turn.urgent_pending && !declined) {
    next_turn(self); // an urgent notification interrupted the step: it starts the next turn
    return;
  }
  if (!st.config().interactive) {
    end_session(self,
                declined ? terminal_reason::permission_blocked : terminal_reason::interrupted);
    return;
  }
  if (declined)
    note_turn_end(self, terminal_reason::permission_blocked, "the user declined a tool call");
  else
    note_turn_end(self, terminal_reason::interrupted, "interrupted");
  drop_queue(self, "interrupted"); // the user stopped the work queued behind this turn too
  next_turn(self);
}

void go_idle(session_ptr self) {
  auto& st = self->state;
  st.phase = session_phase::idle;
  save_info(self);
  publish_status(self, false);
  if (st.config().idle_timeout.count() > 0) {
    st.idle_serial = ++st.idle_timers;
    self->delayed_send(self, st.config().idle_timeout, due_atom::value, st.idle_serial);
  }
}

void next_turn(session_ptr self) {
  auto& st = self->state;
  report_turn_end(self);
  if (st.command_report_pending)
    report_command(self); // the compaction a client's /compact started is done
  if (!st.pending_model.empty() && st.phase != session_phase::ended) {
    auto spec = std::exchange(st.pending_model, std::string{});
    if (auto problem = change_model(self, spec, {}); !problem.empty())
      publish_notice(self, "model", "cannot switch to " + spec + ": " + problem);
  }
  bool urgent = std::exchange(st.turn.urgent_pending, false);
  st.idle_serial = 0;
  // Notifications that arrived during the turn start the next one, all of them at once — after
  // a moment's wait for more when news started the turn that just ended.
  // News is delivered as a whole the moment a turn starts, never one turn at a time.
  if (st.inbox.has_held()) {
    auto news = st.inbox.take_held();
    if (!urgent && news_waits(st)) {
      wait_for_more_news(self, std::move(news));
      go_idle(self);
      return;
    }
    for (auto& queued : st.inbox.take_news())
      news.push_back(std::move(queued));
    start_news_turn(self, std::move(news));
    return;
  }
  while (st.phase != session_phase::ended) {
    auto next = st.inbox.pop();
    if (!next) {
      // A person, a notification from outside or a background subagent's news will start the
      // next turn.
      if ((st.config().interactive && !st.input_closed) || st.config().wait_for_notifications ||
          waiting_for_children(st)) {
        go_idle(self);
        return;
      }
      end_session(self, terminal_reason::completed);
      return;
    }
    auto input = std::move(*next);
    if (run_command(self, input)) {
      if (st.phase == session_phase::compacting) {
        st.command_report_pending = true;
        return; // the compaction's end resumes the loop
      }
      report_command(self);
      continue;
    }
    if (input.origin == message_origin::task_notification) {
      std::vector<message> news{std::move(input)};
      for (auto& queued : st.inbox.take_news())
        news.push_back(std::move(queued));
      start_news_turn(self, std::move(news));
    } else {
      mark_turn_start(input);
      auto prompt = input.content;
      submit_turn(self, std::move(input), prompt);
    }
    return;
  }
}

void first_turn(session_ptr self, bool unanswered) {
  auto& st = self->state;
  st.phase = session_phase::idle;
  if (unanswered && !st.inbox.news_first())
    start_turn(self); // the turn the process died in is answered before any new input
  else
    next_turn(self); // news starts the turn; an unanswered message is in its context too
  // An interrupt that came while the session was starting stops what it started.
  if (std::exchange(st.turn.interrupt_before_start, false) && st.phase != session_phase::ended)
    request_interrupt(self);
}

void enqueue_first(session_ptr self, message input) {
  auto& st = self->state;
  st.inbox.push_first(std::move(input));
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

} // namespace troupe
