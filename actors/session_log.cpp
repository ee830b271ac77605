// The session's record: the log (transcript first, then memory, then subscribers), the state
// and info files, the prompt queue, in-process hooks, and the terminal state.

#include <algorithm>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include "store/ids.hpp"
#include "actors/namer.hpp"
#include "actors/session_state.hpp"

namespace troupe {

void publish_notice(session_ptr self, std::string kind, std::string text) {
  spdlog::debug("session {}: {}: {}", self->state.config().session_id, kind, text);
  publish(self, notice_event{self->state.config().session_id, std::move(kind), std::move(text)});
}

// Inputs are never dropped silently: each one lost is named in a notice.
// Notifications are news, not queued work: they stay (and are written back at the end).
void drop_queue(session_ptr self, const std::string& why) {
  for (auto& input : self->state.inbox.drop_prompts())
    publish_notice(self, "input_dropped",
                   why + "; dropped a queued input from " +
                       (input.origin == message_origin::none ? "?" : to_string(input.origin)) + ": " +
                       input.content.substr(0, 80));
}

// Every message goes to disk before anyone hears of it; a failed write ends the session.
bool append_message(session_ptr self, message msg) {
  auto& st = self->state;
  if (msg.id.empty())
    msg.id = new_message_id();
  if (msg.timestamp_ms == 0)
    msg.timestamp_ms = now_ms();
  if (auto written = st.transcript.append(msg); !written) {
    end_session(self, terminal_reason::error, written.error());
    return false;
  }
  if (msg.role == role::assistant)
    st.last_assistant_text = msg.content;
  bool first_prompt = msg.role == role::user && msg.origin == message_origin::prompt && st.info.first_prompt.empty();
  if (first_prompt)
    st.info.first_prompt = msg.content.substr(0, 200);
  auto ptr = std::make_shared<const message>(std::move(msg));
  st.log.push_back(ptr);
  st.window.append(ptr);
  st.state.messages_count = static_cast<int64_t>(st.log.size());
  publish(self, message_event{st.config().session_id, *ptr, st.config().parent_tool_use_id});
  if (ptr->origin == message_origin::task_notification)
    note_logged(self, *ptr);
  if (first_prompt)
    save_info(self); // troupe ls names the session by it even if the process dies in this turn
  return true;
}

void save_state(session_ptr self) {
  auto& st = self->state;
  if (auto written = st.state_file.write(nlohmann::json(st.state)); !written)
    publish_notice(self, "warning", written.error());
}

void enqueue(session_ptr self, message input) {
  if (auto dropped = self->state.inbox.push(std::move(input)))
    publish_notice(self, "queue_overflow", std::move(*dropped));
}

// Hooks run in order; a throwing hook is reported and skipped, never fatal.
std::vector<message> fire(session_ptr self, hook_point point) {
  auto& st = self->state;
  std::vector<message> produced;
  for (auto& [at, hook] : st.config().hooks) {
    if (at != point)
      continue;
    try {
      hook_context ctx{point, st.config().session_id, st.state, st.log};
      for (auto& m : hook(ctx))
        produced.push_back(std::move(m));
    } catch (const std::exception& e) {
      publish_notice(self, "hook_error",
                     std::string{to_string(point)} + " hook failed: " + e.what());
    }
  }
  for (auto& m : produced) {
    if (m.origin == message_origin::none)
      m.origin = message_origin::hook;
    if (m.id.empty())
      m.id = new_message_id();
  }
  return produced;
}

void fire_and_enqueue(session_ptr self, hook_point point) {
  for (auto& m : fire(self, point))
    enqueue(self, std::move(m));
}

namespace {

// The last of an ended session: its terminal event, then it quits.
void finish_end(session_ptr self) {
  auto& st = self->state;
  // A normal exit does not take linked actors down: hooks still running are stopped here.
  if (st.hooks)
    self->send_exit(st.hooks, caf::exit_reason::user_shutdown);
  if (st.ended_event) {
    st.ended_event->agents_left = st.agents_left;
    save_info(self); // a name that came while it waited is in
    publish(self, *st.ended_event);
    st.ended_event.reset();
  }
  self->quit();
}

} // namespace

void end_session(session_ptr self, terminal_reason reason, std::string error,
                 model_error_kind kind) {
  auto& st = self->state;
  if (st.phase == session_phase::ended)
    return;
  st.phase = session_phase::ended;
  // A subagent left to finish after its parent ended ran in the background, detached.
  if (st.detached && reason == terminal_reason::completed)
    reason = terminal_reason::backgrounded;
  drop_queue(self, "the session ended");
  finish_agents(self, reason, error);
  save_state(self);
  st.info.state = to_string(reason);
  if (st.info.name.empty() && !st.info.first_prompt.empty()) {
    // The namer had no time (or no model): the prompt's first words name it.
    st.info.name = name_from_prompt(st.info.first_prompt);
    st.info.name_source = "prompt";
  }
  save_info(self);
  // The terminal state is made durable off this thread: an fsync takes milliseconds, and a
  // scheduler thread blocked in one holds up every actor queued behind it.
  if (st.config().sync_transcript_at_end)
    if (auto fd = st.transcript.duplicate_descriptor(); fd >= 0)
      self->send(st.config().disk, sync_atom::value, static_cast<int32_t>(fd));
  fire(self, hook_point::session_end);
  // External SessionEnd hooks finish before the terminal event: a front end that sees it may
  // tear everything down.
  if (has_hooks(st, hook_event::session_end)) {
    ++st.end_waits;
    run_hooks(
      self, hook_event::session_end, {{"reason", to_string(reason)}},
      [=](const hook_outcome&) { end_wait_done(self); },
      hook_wait::session_end()); // an interrupt does not wait for them either
  }
  // The turn this end cuts short gets its own report first, with the end's reason.
  if (st.open_turn && reason != terminal_reason::completed)
    note_turn_end(self, reason, error, kind);
  bool turn_open = st.open_turn.has_value();
  report_turn_end(self);
  auto ended = summarise(st, reason, std::move(error), kind);
  ended.turn_reported = turn_open;
  // Info, not error: the error is the user's to read where the session's end is told — the
  // text output's end summary, stream-json's result, a subagent's result or notification in
  // its parent's output, a fleet's result line — not a second time among the log lines.
  if (reason == terminal_reason::error)
    spdlog::info("session {} ended with an error: {}", st.config().session_id, ended.error_message);
  // Published once nothing is waited for any more: a front end that sees it tears down (the
  // HTTP engine included), so what is still on its way must have arrived.
  st.ended_event = std::move(ended);
  for (auto peer : {caf::actor_cast<caf::actor>(st.step), caf::actor_cast<caf::actor>(st.model),
                    caf::actor_cast<caf::actor>(st.executor)})
    self->send_exit(peer, caf::exit_reason::user_shutdown);
  // A name still being written gets a few seconds: a chat ended right after its first reply
  // would otherwise never be named by its model.
  if (st.name_pending) {
    ++st.end_waits;
    self->delayed_send(self, std::chrono::seconds{3}, due_atom::value, uint64_t{0});
  } else if (st.config().namer) {
    self->send_exit(st.config().namer, caf::exit_reason::user_shutdown);
  }
  if (st.end_waits == 0)
    finish_end(self);
}

session_ended_event summarise(const session_state& st, terminal_reason reason, std::string error,
                              model_error_kind kind) {
  auto elapsed = std::chrono::steady_clock::now() - st.started_at;
  session_ended_event ended;
  ended.session_id = st.config().session_id;
  ended.reason = reason;
  ended.error_message = std::move(error);
  ended.error_kind = kind;
  ended.result_text = st.last_assistant_text;
  ended.state = st.state;
  ended.usage = st.usage;
  ended.total_usage = st.info.usage;
  ended.cost_usd = st.run_cost_usd;
  ended.total_cost_usd = st.info.cost_usd;
  ended.cost_known = st.info.cost_known;
  ended.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count();
  ended.permission_denials = st.permission_denials;
  ended.api_duration_ms = st.api_ms;
  ended.model = st.current_model.name;
  return ended;
}

void note_turn_end(session_ptr self, terminal_reason reason, std::string error,
                   model_error_kind kind) {
  auto& turn = self->state.open_turn;
  if (!turn || turn->reason != terminal_reason::completed)
    return; // the first cause stands (an interrupt's end does not hide the error before it)
  turn->reason = reason;
  turn->error = std::move(error);
  turn->error_kind = kind;
}

namespace {

// A report of what happened since the last one: the turn's reason, answer and steps, and the
// usage, cost, model time and refusals counted since.
void publish_report(session_ptr self, terminal_reason reason, std::string error,
                    model_error_kind kind, std::chrono::steady_clock::time_point started,
                    int32_t steps, std::string result) {
  auto& st = self->state;
  auto summary = summarise(st, reason, std::move(error), kind);
  summary.result_text = std::move(result);
  summary.usage.input_tokens = st.usage.input_tokens - st.reported_usage.input_tokens;
  summary.usage.output_tokens = st.usage.output_tokens - st.reported_usage.output_tokens;
  summary.usage.cache_read_tokens = st.usage.cache_read_tokens - st.reported_usage.cache_read_tokens;
  summary.usage.cache_write_tokens =
    st.usage.cache_write_tokens - st.reported_usage.cache_write_tokens;
  summary.cost_usd = st.run_cost_usd - st.reported_cost;
  summary.api_duration_ms = st.api_ms - st.reported_api_ms;
  summary.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now() - started)
                          .count();
  summary.permission_denials.assign(
    st.permission_denials.begin() +
      static_cast<std::ptrdiff_t>(std::min(st.reported_denials, st.permission_denials.size())),
    st.permission_denials.end());
  // Claude Code's num_turns is the model calls of what is reported: this turn's steps.
  summary.state.turn_count = steps;
  summary.state.total_steps = steps;
  st.reported_usage = st.usage;
  st.reported_cost = st.run_cost_usd;
  st.reported_api_ms = st.api_ms;
  st.reported_denials = st.permission_denials.size();
  publish(self, turn_ended_event{std::move(summary)});
}

} // namespace

void report_turn_end(session_ptr self) {
  auto& st = self->state;
  if (!st.open_turn)
    return;
  auto turn = std::move(*st.open_turn);
  st.open_turn.reset();
  if (!st.config().report_turns)
    return;
  publish_report(self, turn.reason, turn.error, turn.error_kind, turn.started,
                 st.state.total_steps - turn.steps, st.last_assistant_text);
}

void report_command(session_ptr self) {
  auto& st = self->state;
  st.command_report_pending = false;
  if (!st.config().report_turns || st.phase == session_phase::ended)
    return;
  publish_report(self, terminal_reason::completed, {}, model_error_kind::none,
                 std::chrono::steady_clock::now(), 0, {});
}

void end_wait_done(session_ptr self) {
  auto& st = self->state;
  if (--st.end_waits > 0)
    return;
  if (st.config().namer)
    self->send_exit(st.config().namer, caf::exit_reason::user_shutdown);
  finish_end(self);
}

void count_usage(session_ptr self, const token_usage& usage) {
  auto& st = self->state;
  st.usage += usage;      // this run's (the result line)
  st.info.usage += usage; // the session's, over every run (session.json, the status line)
  // Priced per call: a /model switch changes the price from then on.
  if (auto cost = cost_usd(st.current_model.name, usage)) {
    st.info.cost_usd += *cost;
    st.run_cost_usd += *cost;
  } else
    st.info.cost_known = false;
}

void save_info(session_ptr self) {
  auto& st = self->state;
  st.info.updated_ms = now_ms();
  st.info.model = st.current_model.name;
  st.info.turns = st.state.turn_count;
  st.info.steps = st.state.total_steps;
  if (auto written = st.info_file.write(nlohmann::json(st.info)); !written)
    spdlog::warn("session {}: {}", st.config().session_id, written.error());
}

void publish_status(session_ptr self, bool busy) {
  auto& st = self->state;
  session_status_event status;
  status.session_id = st.config().session_id;
  status.busy = busy;
  status.model = st.current_model.name;
  status.name = st.info.name;
  status.turn_count = st.state.turn_count;
  status.usage = st.info.usage;
  status.cost_usd = st.info.cost_usd;
  status.cost_known = st.info.cost_known;
  status.context_tokens = st.window.projected_tokens();
  status.context_window = st.window.budget().limits.context_window;
  status.background = st.agents_running.background;
  publish(self, status);
}

} // namespace troupe
