// The agent supervisor: launches (asynchronously), monitors, caps, waits for, stops and detaches
// the agents of one owner, and tells the owner of every end.

#include "actors/agent_supervisor.hpp"

#include <algorithm>
#include <chrono>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/agent_supervisor_state.hpp"
#include "store/ids.hpp"
#include "tools/tool_spec.hpp"

namespace troupe::agent_supervision {

// Called last in a handler: the owner hears counts after the ends that changed them.
void publish_counts(self_ptr self) {
  auto& st = self->state;
  if (st.counts.background == st.counts_sent.background &&
      st.counts.awaited == st.counts_sent.awaited)
    return;
  st.counts_sent = st.counts;
  self->send(st.owner, st.counts);
}

// The ids for an error message: a few, not a thousand.
std::string agent_ids(const supervisor_state& st) {
  constexpr size_t shown = 20;
  std::string ids;
  size_t n = 0;
  for (auto& [id, a] : st.agents)
    if (n++ < shown)
      ids += (ids.empty() ? "" : ", ") + id;
  if (n > shown)
    ids += " and " + std::to_string(n - shown) + " more";
  return ids.empty() ? "none" : ids;
}

task_notification end_notice(const supervised_agent& a, std::string reason, std::string text,
                             std::string error) {
  task_notification n;
  n.id = new_message_id();
  n.source = "agent";
  n.task_id = a.info.id;
  n.reason = std::move(reason);
  n.status = agent_status(n.reason);
  n.error = std::move(error);
  n.description = a.info.description;
  n.text = std::move(text);
  n.sent_at_us = now_us();
  return n;
}

// Tells the owner; what it cannot take any more goes to its durable queue.
void forward(self_ptr self, const agent_descriptor& info, task_notification n, bool answered) {
  auto& st = self->state;
  if (st.finishing) {
    // The owner has ended: its next run reads the news from its queue.
    if (!answered)
      self->send(st.config.disk, append_atom::value, st.config.owner_dir.queue().string(), n);
    caf::anon_send(st.owner, agent_ended{info, n, true}); // its cost counts, if it listens
    return;
  }
  auto queue = st.config.owner_dir.queue().string();
  auto disk = st.config.disk;
  self->request(st.owner, std::chrono::seconds{10}, agent_ended{info, n, answered})
    .then(
      [=](bool delivered) {
        if (!delivered && !answered)
          self->send(disk, append_atom::value, queue, n);
      },
      [=](caf::error&) {
        if (!answered)
          self->send(disk, append_atom::value, queue, n);
      });
}

// An agent ended (it said so, it stopped, it could not start): answered where someone waits,
// told to the owner in any case.
void record_end(self_ptr self, supervised_agent& a, task_notification n) {
  auto& st = self->state;
  if (!a.running())
    return;
  if (n.description.empty())
    n.description = a.info.description;
  bool answered = false;
  update(self, a, [&](supervised_agent& x) {
    x.info.state = n.status;
    x.info.reason = n.reason;
    x.info.error = n.error;
    x.info.usage = n.usage;
    x.info.cost_usd = n.cost_usd;
    x.info.result = n.text;
    if (x.waiting) {
      // A foreground launch: the answer is the call's result, not a notification.
      tool_result result;
      result.output = n.text.empty() ? "(the agent gave no final answer)" : n.text;
      result.is_error = n.status != "completed";
      x.waiting->deliver(std::move(result));
      x.waiting.reset();
      answered = true;
    } else if (x.reported && !x.detached) {
      answered = true;
    } else {
      for (auto& w : st.waits)
        if (std::find(w.ids.begin(), w.ids.end(), x.info.id) != w.ids.end()) {
          w.taken.push_back(x.info.id);
          answered = true;
        }
    }
    x.reported = true;
  });
  forward(self, a.info, std::move(n), answered);
  check_waits(self);
}

namespace {

void quit_when_done(self_ptr self);

// Moves a foreground launch to the background, or routes a command to an agent below.
caf::result<control_reply> control(self_ptr self, control_command command,
                                   const std::string& arg) {
  auto& st = self->state;
  auto step = first_agent_of(arg);
  if ((command == control_command::interrupt_agent ||
       command == control_command::notify_agent) &&
      !step)
    return control_error(std::string{to_string(command)} +
                         " takes the agent's path, agents/X[/agents/Y…]");
  if ((command == control_command::background || command == control_command::interrupt_agent ||
       command == control_command::notify_agent) &&
      step) {
    // An agent below, named by its path: agents/X/agents/Y goes to X as Y (`background` takes
    // a child's bare id), and `interrupt-agent agents/X` interrupts X. A command of its own,
    // not `interrupt` with an argument: a session run by an older troupe, which ignores the
    // argument, refuses it instead of interrupting itself. `notify-agent agents/X` has X read
    // its own durable queue (`troupe notify` appended to it), so the notification takes the
    // way of X's own `notify`, with its rules.
    auto c = st.agents.find(step->agent_id);
    bool to_child_itself = step->below.empty() && command != control_command::background;
    if ((step->below.empty() && !to_child_itself) || c == st.agents.end() ||
        !c->second.running() || !c->second.actor)
      return control_error("no running agent " + step->agent_id + " in session " +
                           st.config.owner_id);
    auto forwarded = !to_child_itself                             ? command
                     : command == control_command::interrupt_agent ? control_command::interrupt
                                                                   : control_command::poke;
    auto inner = step->below;
    // `background` names the agent to move by its bare id once it reaches that agent's parent.
    if (auto next = first_agent_of(inner); command == control_command::background && next &&
                                           next->below.empty())
      inner = next->agent_id;
    auto promise = self->make_response_promise<control_reply>();
    self->request(c->second.actor, std::chrono::seconds{5}, control_atom::value, forwarded, inner)
      .then([=](const control_reply& answer) mutable { promise.deliver(answer); },
            [=](caf::error& err) mutable {
              promise.deliver(control_error(self->system().render(err)));
            });
    return promise;
  }
  if (command == control_command::background) {
    auto c = st.agents.find(arg);
    if (c == st.agents.end())
      return control_error("no agent '" + arg + "' in this session (agents: " + agent_ids(st) +
                           ")");
    auto& a = c->second;
    if (!a.running())
      return control_error("agent " + arg + " has already ended (" + a.info.state + ")");
    if (!a.waiting)
      return control_ok("agent " + arg + " already runs in the background");
    update(self, a, [&](supervised_agent& x) {
      x.waiting->deliver(tool_result{"Moved agent " + arg +
                                       " to the background: it goes on, and you will get a "
                                       "<task-notification> when it ends.",
                                     false, 0, false});
      x.waiting.reset();
      x.reported = false;
      x.info.foreground = false;
    });
    publish_counts(self);
    return control_ok("moved agent " + arg + " to the background");
  }
  return control_error("the agent supervisor does not take the control command '" +
                       std::string{to_string(command)} + "'");
}

// The owner was interrupted: what waits on agents stops waiting.
void interrupt(self_ptr self) {
  auto& st = self->state;
  if (st.finishing) {
    // Ended, and waiting for the agents it let finish: an interrupt stops them.
    for (auto& [id, a] : st.agents)
      if (a.actor && st.leaving.count(a.actor.address()))
        self->send_exit(a.actor, caf::exit_reason::user_shutdown);
    return;
  }
  for (auto& [id, a] : st.agents) {
    if (!a.waiting)
      continue;
    update(self, a, [&](supervised_agent& x) {
      auto result = error_result("[interrupted: agent " + id + " was stopped]");
      result.exit_code = 130;
      x.waiting->deliver(std::move(result));
      x.waiting.reset();
      x.reported = true;
    });
    if (a.actor)
      caf::anon_send(a.actor, interrupt_atom::value);
    else
      record_end(self, a, end_notice(a, "interrupted", "[interrupted before it started]"));
  }
  // Waits end now; the results they had taken are told as notifications after all.
  for (auto& w : std::exchange(st.waits, {})) {
    auto result = wait_answer(self, w, " (interrupted)", true);
    result.exit_code = 130;
    w.promise.deliver(std::move(result));
    release_taken(self, w);
  }
  publish_counts(self);
}

agent_list finish(self_ptr self, agents_at_end at_end) {
  auto& st = self->state;
  agent_list left;
  st.finishing = true;
  for (auto& w : std::exchange(st.waits, {})) {
    w.promise.deliver(error_result("[the parent session ended]"));
    release_taken(self, w);
  }
  // Nobody waits for an agent any more: each end from here on goes to the owner's queue.
  for (auto& [id, a] : st.agents)
    if (a.running() && a.waiting)
      update(self, a, [](supervised_agent& x) {
        x.waiting->deliver(error_result("[the parent session ended]"));
        x.waiting.reset();
      });
  // Left to finish, a launch still queued to spawn starts now and runs to its end like the
  // others: the owner ending a moment after launching it must not drop it.
  while (at_end == agents_at_end::finish && !st.to_spawn.empty())
    spawn_some(self);
  st.to_spawn.clear();
  for (auto& [id, a] : st.agents) {
    if (!a.running())
      continue;
    left.agents.push_back(a.info);
    if (!a.actor) {
      record_end(self, a, end_notice(a, "interrupted", "[stopped before it started: the parent "
                                                       "session ended]"));
      left.agents.back().state = a.info.state;
      continue;
    }
    st.leaving.insert(a.actor.address());
    if (at_end == agents_at_end::stop) {
      self->send_exit(a.actor, caf::exit_reason::user_shutdown);
      left.agents.back().state = "stopped";
      continue;
    }
    // Left to finish, detached: it writes its end to the owner's durable queue itself.
    update(self, a, [](supervised_agent& x) {
      x.detached = true;
      x.reported = true;
    });
    self->request(a.actor, std::chrono::seconds{10}, control_atom::value, control_command::detach,
                  std::string{})
      .then([](const control_reply&) {}, [](caf::error&) {});
  }
  publish_counts(self);
  quit_when_done(self);
  return left;
}

void quit_when_done(self_ptr self) {
  auto& st = self->state;
  if (st.finishing && st.leaving.empty())
    self->quit();
}

agent_supervisor_actor::behavior_type supervisor(self_ptr self, agent_supervisor_config config,
                                                 agent_owner_actor owner) {
  auto& st = self->state;
  st.config = std::move(config);
  st.owner = std::move(owner);
  // Agents of earlier runs: ended (their process is gone), listed and resumable by id.
  for (auto& past : st.config.past_agents) {
    auto& a = st.agents[past.id];
    a.info.id = past.id;
    a.info.description = past.name;
    a.info.state = past.state == "running" ? "crashed" : past.state;
    a.info.reason = a.info.state;
    a.info.usage = past.usage;
    a.info.cost_usd = past.cost_usd;
    a.reported = true;
  }
  self->set_down_handler([=](caf::down_msg& down) {
    auto& s = self->state;
    auto found = s.by_address.find(down.source);
    if (found == s.by_address.end())
      return;
    auto id = found->second;
    s.by_address.erase(found);
    s.leaving.erase(down.source);
    if (auto a = s.agents.find(id); a != s.agents.end() && a->second.running() &&
                                    a->second.detached)
      update(self, a->second, [](supervised_agent& x) { x.info.state = "detached"; });
    else if (a != s.agents.end() && a->second.running())
      // It stopped without telling its end: a crash, or a kill.
      record_end(self, a->second,
                 end_notice(a->second, "crashed",
                            "the agent stopped unexpectedly: " +
                              plain_words(self->system(), down.reason),
                            plain_words(self->system(), down.reason)));
    publish_counts(self);
    quit_when_done(self);
  });
  return {
    [=](execute_atom, const tool_call& call) -> caf::result<tool_result> {
      // Input the model wrote is checked, but a call must never take the supervisor (and so
      // the session) down: anything that slips through is an error result.
      try {
        if (call.name == "task_wait")
          return wait_for(self, call);
        if (call.name == "task_output" || call.name == "task_stop")
          return agent_task_call(self, call);
        return launch(self, call);
      } catch (const std::exception& e) {
        return error_result(std::string{"bad input for "} + call.name + ": " + e.what());
      }
    },
    [=](notify_atom, task_notification& n) {
      auto& s = self->state;
      auto found = s.agents.find(n.task_id);
      if (found != s.agents.end() && found->second.running()) {
        if (n.status.empty())
          n.status = agent_status(n.reason);
        record_end(self, found->second, std::move(n));
      } else {
        forward(self, agent_descriptor{}, std::move(n), false); // not one of ours: pass it on
      }
      publish_counts(self);
      return true;
    },
    [=](interrupt_atom) { interrupt(self); },
    [=](control_atom, control_command command, const std::string& arg) {
      return control(self, command, arg);
    },
    [=](list_atom) {
      agent_list list;
      for (auto& [id, a] : self->state.agents)
        list.agents.push_back(a.info);
      return list;
    },
    [=](finish_atom, agents_at_end at_end) { return finish(self, at_end); },
    [=](spawn_atom) { spawn_some(self); },
    [=](due_atom, uint64_t serial) {
      auto& s = self->state;
      for (size_t i = 0; i < s.waits.size(); ++i) {
        if (s.waits[i].serial != serial)
          continue;
        auto w = std::move(s.waits[i]);
        s.waits.erase(s.waits.begin() + static_cast<std::ptrdiff_t>(i));
        auto waited = std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::steady_clock::now() - w.since)
                        .count();
        w.promise.deliver(
          wait_answer(self, w, " (stopped waiting after " + std::to_string(waited) + " s)"));
        return;
      }
    },
  };
}

} // namespace

} // namespace troupe::agent_supervision

namespace troupe {

std::string plain_words(const caf::actor_system& sys, const caf::error& reason) {
  if (reason == caf::exit_reason::kill)
    return "it was killed";
  if (reason == caf::exit_reason::user_shutdown)
    return "it was shut down";
  if (reason == caf::exit_reason::unhandled_exception)
    return "it crashed (an unhandled exception)";
  if (reason == caf::exit_reason::unreachable || reason == caf::exit_reason::unknown)
    return "it is gone";
  if (reason == caf::exit_reason::normal)
    return "it ended";
  return "it stopped: " + sys.render(reason);
}

agent_supervisor_actor spawn_agent_supervisor(caf::actor_system& sys,
                                              agent_supervisor_config config,
                                              agent_owner_actor owner) {
  return sys.spawn(agent_supervision::supervisor, std::move(config), std::move(owner));
}

} // namespace troupe
