// External hooks from the session's side: whether an event has commands, running them without
// the session ever waiting, and what their answers put into the conversation.

#include <caf/actor_system.hpp>

#include "actors/session_state.hpp"

namespace troupe {

step_config make_step_config(const session_state& st) {
  step_config config;
  config.system_prompt = st.config.system_prompt;
  config.registry = st.config.registry;
  config.format = st.config.format;
  config.max_parallel_calls = st.config.max_parallel_tools;
  config.permissions = st.config.permissions;
  config.asker = st.config.asker;
  config.hooks = st.hooks;
  config.pre_tool_hooks = has_hooks(st, hook_event::pre_tool_use);
  config.post_tool_hooks = has_hooks(st, hook_event::post_tool_use);
  config.agents = st.agents;
  return config;
}

bool has_hooks(const session_state& st, hook_event event) {
  return st.hook_events.count(event) > 0;
}

void run_hooks(session_ptr self, hook_event event, nlohmann::json input,
               std::function<void(const hook_outcome&)> then, bool after_end,
               std::function<void()> on_interrupt) {
  auto& st = self->state;
  if (!has_hooks(st, event)) {
    then(hook_outcome{});
    return;
  }
  // An interrupt does not wait for the hooks: it takes `on_interrupt` instead, and their answer,
  // when it comes, is dropped (the serial says it is stale).
  auto serial = ++st.hook_wait_serial;
  st.hook_interrupt = std::move(on_interrupt);
  auto current = [=] {
    auto& s = self->state;
    if (s.hook_wait_serial != serial)
      return false;
    s.hook_interrupt = nullptr;
    return s.phase != session_phase::ended || after_end;
  };
  self->request(st.hooks, caf::infinite, hook_atom::value, hook_request{event, "", std::move(input)})
    .then(
      [=](const hook_outcome& outcome) {
        if (current())
          then(outcome);
      },
      [=](caf::error& err) {
        if (!current())
          return;
        publish_notice(self, "hook_error",
                       std::string{to_string(event)} + " hooks failed: " +
                         self->system().render(err));
        then(hook_outcome{});
      });
}

bool interrupt_hooks(session_ptr self) {
  auto& st = self->state;
  if (!st.hook_interrupt)
    return false;
  auto taken = std::exchange(st.hook_interrupt, nullptr);
  ++st.hook_wait_serial; // the hooks' answer is stale now
  taken();
  return true;
}

bool log_hook_context(session_ptr self, hook_event event, const std::string& text) {
  if (text.empty())
    return true;
  message m;
  m.role = role::user;
  m.origin = "hook";
  m.content = text;
  m.meta = {{"hook_event", event}};
  return append_message(self, std::move(m));
}

void queue_hook_messages(session_ptr self, const hook_outcome& outcome) {
  for (auto& text : outcome.messages)
    enqueue(self, make_input(text, "hook"));
}

} // namespace troupe
