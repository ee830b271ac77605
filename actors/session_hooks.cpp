// External hooks from the session's side: whether an event has commands, running them without
// the session ever waiting, and what their answers put into the conversation.

#include <caf/actor_system.hpp>

#include "actors/session_state.hpp"

namespace troupe {

step_config make_step_config(const session_state& st) {
  step_config config;
  config.system_prompt = st.current_model.system_prompt;
  config.registry = st.config().registry;
  config.format = st.current_model.format;
  config.max_parallel_calls = st.config().max_parallel_tools;
  config.permissions = st.config().permissions;
  config.asker = st.config().asker;
  config.hooks = st.hooks;
  config.pre_tool_hooks = has_hooks(st, hook_event::pre_tool_use);
  config.post_tool_hooks = has_hooks(st, hook_event::post_tool_use);
  config.agents = st.agents;
  config.mcp_servers = st.config().mcp_servers;
  return config;
}

bool has_hooks(const session_state& st, hook_event event) {
  return st.hook_events.count(event) > 0;
}

void run_hooks(session_ptr self, hook_event event, nlohmann::json input,
               std::function<void(const hook_outcome&)> then, hook_wait wait) {
  auto& st = self->state;
  if (!has_hooks(st, event)) {
    then(hook_outcome{});
    return;
  }
  // An interrupt does not wait for the hooks: it carries out `wait` instead, and their answer,
  // when it comes, is dropped (the serial says it is stale).
  bool after_end = wait.what == hook_wait::kind::session_end;
  auto serial = ++st.turn.hook_wait_serial;
  st.turn.hooks = std::move(wait);
  auto current = [=](hook_wait& taken) {
    auto& s = self->state;
    if (s.turn.hook_wait_serial != serial)
      return false;
    taken = std::exchange(s.turn.hooks, hook_wait{});
    return s.phase != session_phase::ended || after_end;
  };
  self->request(st.hooks, caf::infinite, hook_atom::value, hook_request{event, "", std::move(input)})
    .then(
      [=](const hook_outcome& outcome) {
        hook_wait taken;
        if (!current(taken))
          return;
        if (outcome.stop && !after_end) {
          if (taken.what == hook_wait::kind::generation_post)
            taken.may_run_tools.deliver(false); // no tool of the reply runs
          // A stopped prompt stays out of the context, as a blocked one does.
          auto meta = nlohmann::json::object();
          if (taken.what == hook_wait::kind::prompt_submit && taken.prompt)
            meta["prompt"] = taken.prompt->content;
          stop_for_hook(self, event, outcome.stop_reason, meta);
          return;
        }
        then(outcome);
      },
      [=](caf::error& err) {
        hook_wait taken;
        if (!current(taken))
          return;
        publish_notice(self, "hook_error",
                       std::string{to_string(event)} + " hooks failed: " +
                         self->system().render(err));
        then(hook_outcome{});
      });
}

bool interrupt_hooks(session_ptr self) {
  auto& turn = self->state.turn;
  if (turn.hooks.what == hook_wait::kind::none)
    return false;
  auto wait = std::exchange(turn.hooks, hook_wait{});
  ++turn.hook_wait_serial; // the hooks' answer is stale now
  switch (wait.what) {
    case hook_wait::kind::none:
      break;
    case hook_wait::kind::session_start:
      turn.interrupt_before_start = true; // stops the turn it would start
      enter_loop(self, wait.unanswered);
      break;
    case hook_wait::kind::prompt_submit:
      // The prompt was given, so it is logged, and the turn stops there.
      if (wait.prompt && !append_message(self, std::move(*wait.prompt)))
        break;
      stop_turn_interrupted(self, false);
      break;
    case hook_wait::kind::finished_turn:
      after_interrupted_turn(self);
      break;
    case hook_wait::kind::final_stop:
      after_final_turn(self, wait.end); // the turn's end was decided already
      break;
    case hook_wait::kind::step_pre:
      stop_turn_interrupted(self, false);
      break;
    case hook_wait::kind::generation_post:
      wait.may_run_tools.deliver(false); // no tool runs
      break;
    case hook_wait::kind::pre_compact:
      compaction_ended(self, wait.compaction, compaction_status::interrupted, "interrupted");
      break;
    case hook_wait::kind::session_end:
      // An interrupt does not wait for them either; said, since they are stopped unfinished.
      publish_notice(self, "hook", "the SessionEnd hooks were stopped by an interrupt");
      end_wait_done(self);
      break;
  }
  return true;
}

bool log_hook_context(session_ptr self, hook_event event, const std::string& text) {
  if (text.empty())
    return true;
  message m;
  m.role = role::user;
  m.origin = message_origin::hook;
  m.content = text;
  m.meta = {{"hook_event", event}};
  return append_message(self, std::move(m));
}

void stop_for_hook(session_ptr self, hook_event event, const std::string& reason,
                   const nlohmann::json& meta) {
  auto& st = self->state;
  if (st.phase == session_phase::ended)
    return;
  message note;
  note.role = role::system;
  note.origin = message_origin::hook_blocked;
  note.content = "A " + std::string{to_string(event)} + " hook stopped the session" +
                 (reason.empty() ? "." : ": " + reason);
  note.meta = {{"hook_event", event}, {"continue", false}};
  if (meta.is_object())
    note.meta.update(meta);
  if (!append_message(self, std::move(note)))
    return;
  save_state(self);
  end_session(self, terminal_reason::hook_stopped,
              reason.empty() ? "a " + std::string{to_string(event)} + " hook stopped the session"
                             : reason);
}

void queue_hook_messages(session_ptr self, const hook_outcome& outcome) {
  for (auto& text : outcome.messages)
    enqueue(self, make_input(text, message_origin::hook));
}

} // namespace troupe
