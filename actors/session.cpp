#include "actors/session.hpp"

#include <utility>

#include <caf/actor_system.hpp>

#include "actors/hook_runner.hpp"
#include "store/ids.hpp"
#include "actors/session_state.hpp"
#include "actors/step.hpp"
#include "tools/claude_code_names.hpp"

namespace troupe {

namespace {

session_actor::behavior_type session_behavior(session_ptr self, session_config config,
                                              model_client_actor model,
                                              tool_executor_actor executor) {
  auto& st = self->state;
  st.subscribers = config.subscribers;
  st.model = std::move(model);
  st.executor = std::move(executor);
  if (!config.hook_commands.empty()) {
    hook_runner_config hooks;
    hooks.commands = config.hook_commands;
    hooks.session_id = config.session_id;
    hooks.transcript_path = config.paths().transcript();
    hooks.cwd = config.cwd;
    hooks.shell_program = config.hook_shell;
    hooks.environment = config.process_environment;
    hooks.callbacks = config.hook_callbacks;
    hooks.failures_shown = config.events_shown;
    hooks.permission_mode =
      claude_permission_mode(config.permissions ? to_string(config.permissions->mode) : "bypass");
    st.hooks = spawn_hook_runner(self->system(), std::move(hooks), self);
    self->link_to(st.hooks);
    for (auto& hook : config.hook_commands)
      st.hook_events.insert(hook.event);
  }
  if (config.spawn_subagent) {
    agent_supervisor_config agents;
    agents.owner_id = config.session_id;
    agents.owner_dir = config.paths();
    agents.registry = config.registry;
    agents.depth = config.depth;
    agents.max_depth = config.max_depth;
    agents.max_children = config.max_children;
    agents.spawn_subagent = config.spawn_subagent;
    agents.types = config.subagent_types;
    agents.past_agents = config.past_agents;
    agents.disk = config.disk;
    st.agents = spawn_agent_supervisor(self->system(), std::move(agents), self);
    self->link_to(st.agents);
  }
  st.inbox = session_inbox{config.queue_cap};
  // What the session changes later starts from the configuration, which stays as it was given.
  st.current_model = {config.model_name, config.format, config.system_prompt, config.budget};
  st.parent = config.parent;
  st.history = std::exchange(config.history, {});
  auto initial_inputs = std::exchange(config.initial_inputs, {});
  st.set_config(std::move(config));
  st.step = spawn_step(self->system(), make_step_config(st), self, st.model, st.executor);
  // Linked both ways: a killed session takes its peers (and their children) with it, and a
  // peer that dies unexpectedly ends the session with an error instead of a silent hang.
  for (auto peer : {caf::actor_cast<caf::actor>(st.step), caf::actor_cast<caf::actor>(st.model),
                    caf::actor_cast<caf::actor>(st.executor)})
    self->link_to(peer);
  // Initial prompts take the same path as every other input, queue cap included.
  for (auto& input : initial_inputs)
    accept_input(self, std::move(input));
  // A subagent watches its parent: a parent that stops, however it stops, stops it too.
  if (st.parent)
    self->monitor(st.parent);
  self->set_down_handler([=](caf::down_msg& msg) {
    auto& s = self->state;
    if (s.parent && msg.source == s.parent.address()) {
      // A parent that ends cleanly has already said what becomes of us: a stop would have
      // come before this (messages from one sender keep their order), so it let us finish.
      // A parent that crashed or was killed takes us down.
      if (msg.reason == caf::exit_reason::normal) {
        s.parent = agent_parent_actor{};
        s.detached = true;
        publish_notice(self, "detached",
                       "the parent session ended; this agent finishes on its own and leaves its "
                       "result in the parent's queue");
        return;
      }
      end_session(self, terminal_reason::interrupted,
                  "the parent session stopped: " + plain_words(self->system(), msg.reason));
      return;
    }
  });
  self->set_exit_handler([=](caf::exit_msg& msg) {
    auto& s = self->state;
    if (s.agents && msg.source == s.agents.address()) {
      // The supervisor quits once the agents it was left with are done.
      if (s.waiting_for_agents) {
        s.waiting_for_agents = false;
        end_wait_done(self);
      }
      if (s.phase == session_phase::ended || msg.reason == caf::exit_reason::normal)
        return;
    }
    if (s.phase == session_phase::ended)
      return; // our own peers, stopped by end_session
    auto why = plain_words(self->system(), msg.reason);
    bool from_parent = s.parent && msg.source == s.parent.address();
    bool from_peer = msg.source == s.step.address() || msg.source == s.model.address() ||
                     msg.source == s.executor.address() ||
                     (s.agents && msg.source == s.agents.address());
    if (from_peer)
      end_session(self, terminal_reason::error, "an actor of this session stopped: " + why);
    else if (from_parent)
      end_session(self, terminal_reason::interrupted, "stopped by its parent session");
    else
      end_session(self, terminal_reason::interrupted, "the session was stopped: " + why);
  });
  return {
    [=](start_atom) { begin_session(self); },
    [=](submit_atom, message& input) { accept_input(self, std::move(input)); },
    [=](interrupt_atom) { request_interrupt(self); },
    [=](reply_atom, message& reply) { return accept_reply(self, std::move(reply)); },
    [=](subscribe_atom, event_sink_actor& sink) {
      self->state.subscribers.push_back(std::move(sink));
    },
    [=](generation_progress& progress) {
      progress.session_id = self->state.config().session_id;
      for (auto& sink : self->state.subscribers)
        self->send(sink, progress);
    },
    [=](notify_atom, task_notification& n) { return accept_notification(self, std::move(n)); },
    [=](agent_ended& end) { return accept_agent_end(self, std::move(end)); },
    [=](agent_counts counts) {
      auto& s = self->state;
      s.agents_running = counts;
      if (s.phase != session_phase::idle)
        return;
      publish_status(self, false); // the status line shows the background agents
      // A headless run that waited only for its agents, whose last end was answered elsewhere
      // (a task_wait, a foreground call) before these counts came: nothing is left to wait for.
      if (!s.config().interactive && !s.config().wait_for_notifications && counts.awaited == 0 &&
          s.inbox.empty() && s.news_serial == 0)
        next_turn(self);
    },
    [=](notice_event& notice) {
      notice.session_id = self->state.config().session_id;
      publish(self, notice);
    },
    [=](control_atom, control_command command, const std::string& arg) {
      return run_control(self, command, arg);
    },
    [=](hook_run_event& e) { publish(self, e); },
    [=](due_atom, uint64_t serial) {
      auto& s = self->state;
      if (serial != 0 && serial == s.news_serial) {
        // The news gathered while idle starts its turn now (a prompt may have started one).
        s.news_serial = 0;
        if (s.phase == session_phase::idle && !s.inbox.empty())
          next_turn(self);
        return;
      }
      if (s.phase == session_phase::ended && serial == 0 && s.name_pending) {
        s.name_pending = false; // the name took too long: the prompt's words stay
        end_wait_done(self);
        return;
      }
      if (s.phase != session_phase::idle || s.idle_serial != serial || serial == 0)
        return;
      // Not idle while background subagents still work: their news is what it waits for.
      if (waiting_for_children(s))
        go_idle(self);
      else
        end_session(self, terminal_reason::completed);
    },
  };
}

} // namespace

session_actor spawn_session(caf::actor_system& sys, session_config config,
                            model_client_actor model, tool_executor_actor executor) {
  return sys.spawn(session_behavior, std::move(config), std::move(model), std::move(executor));
}

message make_input(std::string text, message_origin origin) {
  message m;
  m.id = new_message_id();
  m.role = role::user;
  m.content = std::move(text);
  m.origin = origin;
  m.timestamp_ms = now_ms();
  return m;
}

} // namespace troupe
