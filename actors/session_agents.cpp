// The session's subagents: launches from the task tool, their ends reported as notifications,
// supervision (down messages, the end of the parent).

#include <algorithm>
#include <chrono>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include "actors/ids.hpp"
#include "actors/session_state.hpp"
#include "tools/tool_spec.hpp"

namespace troupe {

namespace {

size_t running_children(const session_state& st) {
  return static_cast<size_t>(std::count_if(st.children.begin(), st.children.end(),
                                           [](auto& c) { return c.second.running; }));
}

const char* status_for(terminal_reason reason) {
  switch (reason) {
    case terminal_reason::completed:
    case terminal_reason::backgrounded:
      return "completed";
    case terminal_reason::interrupted:
      return "stopped";
    default:
      return "failed";
  }
}

} // namespace

std::filesystem::path queue_path(const session_state& st) {
  return st.config.session_dir / "queue.jsonl";
}

void answer_launch(child_agent& child, tool_result result) {
  if (!child.waiting)
    return;
  child.waiting->deliver(std::move(result));
  child.waiting.reset();
  child.reported = true;
}

std::string child_list(const session_state& st) {
  std::string ids;
  for (auto& [id, child] : st.children)
    ids += (ids.empty() ? "" : ", ") + id;
  return ids.empty() ? "none" : ids;
}

caf::result<tool_result> launch_subagent(session_ptr self, const tool_call& call) {
  auto& st = self->state;
  if (!st.config.spawn_subagent)
    return error_result("subagents are not available in this session");
  if (const auto* spec = st.config.registry->find(call.name))
    if (auto problem = validate_input(*spec, call.input))
      return error_result(*problem);
  const auto& input = call.input;
  auto prompt = input.value("prompt", std::string{});
  if (prompt.find_first_not_of(" \t\r\n") == std::string::npos)
    return error_result("the task needs a prompt: the whole task, self-contained");
  if (auto resume = input.value("resume", std::string{}); !resume.empty()) {
    // An id names a directory under agents/: never a path out of it.
    if (!is_valid_session_id(resume))
      return error_result("no agent '" + resume + "' in this session (agents: " +
                          child_list(st) + ")");
    auto c = st.children.find(resume);
    if (c != st.children.end() && c->second.running) {
      // Alive: the prompt joins its queue, and its end is reported as usual. It may have ended
      // a moment ago, its notification still on the way: the model is told to wait for it.
      auto promise = self->make_response_promise<tool_result>();
      auto ended = error_result("agent " + resume + " has just ended; its result is on the way "
                                "as a <task-notification>. Resume it again after that.");
      self->request(c->second.actor, std::chrono::seconds{10}, control_atom::value,
                    std::string{"input"}, prompt)
        .then(
          [=](const std::string& answer) mutable {
            if (answer != "queued") {
              promise.deliver(ended);
              return;
            }
            if (auto child = self->state.children.find(resume);
                child != self->state.children.end())
              child->second.reported = false;
            promise.deliver(tool_result{"Sent the prompt to agent " + resume +
                                          ", which is still running; you will get a "
                                          "<task-notification> when it ends.",
                                        false, 0, false});
          },
          [=](caf::error&) mutable { promise.deliver(ended); });
      return promise;
    }
    if (!std::filesystem::exists(st.config.session_dir / "agents" / resume / "transcript.jsonl"))
      return error_result("no agent '" + resume + "' in this session (agents: " +
                          child_list(st) + ")");
  }
  if (st.config.depth + 1 > st.config.max_depth)
    return error_result("cannot launch a subagent: this agent is at depth " +
                        std::to_string(st.config.depth) + " and the limit is " +
                        std::to_string(st.config.max_depth) +
                        " (raise it with --max-agent-depth); do the work yourself");
  if (running_children(st) >= st.config.max_children)
    return error_result("cannot launch a subagent: the limit of " +
                        std::to_string(st.config.max_children) + " running at once is reached " +
                        "(raise it with --max-agents); wait for a <task-notification> first");
  subagent_launch launch;
  launch.resume = !input.value("resume", std::string{}).empty();
  launch.agent_id = launch.resume ? input.value("resume", std::string{})
                                  : "agent_" + random_hex(6);
  launch.prompt = prompt;
  launch.description = input.value("description", prompt.substr(0, 60));
  if (auto known = st.children.find(launch.agent_id);
      launch.resume && !input.contains("description") && known != st.children.end() &&
      !known->second.description.empty())
    launch.description = known->second.description;
  launch.model = input.value("model", std::string{});
  launch.max_steps = input.value("max_steps", 0);
  if (auto tools = input.find("tools"); tools != input.end() && tools->is_array())
    for (auto& t : *tools)
      if (t.is_string())
        launch.tools.push_back(t.get<std::string>());
  launch.session_dir = st.config.session_dir / "agents" / launch.agent_id;
  launch.depth = st.config.depth + 1;
  auto spawned = st.config.spawn_subagent(self->system(), launch, session_actor{self});
  if (!spawned)
    return error_result("cannot launch the subagent: " + spawned.error());
  auto child_actor = *spawned;
  self->monitor(child_actor);
  auto& child = st.children[launch.agent_id];
  child = child_agent{};
  child.actor = child_actor;
  child.description = launch.description;
  caf::anon_send(child_actor, start_atom::value);
  publish_notice(self, "agent_started",
                 "agent " + launch.agent_id + " (" +
                   (input.value("mode", std::string{"foreground"}) == "background" ? "background"
                                                                                   : "foreground") +
                   "): " + launch.description);
  if (input.value("mode", std::string{"foreground"}) == "background")
    return tool_result{"Started agent " + launch.agent_id +
                         " in the background. You will get a <task-notification> when it ends; "
                         "keep working meanwhile.",
                       false, 0, false};
  auto promise = self->make_response_promise<tool_result>();
  child.waiting = promise;
  return promise;
}

bool waiting_for_children(const session_state& st) {
  return std::any_of(st.children.begin(), st.children.end(),
                     [](auto& c) { return c.second.running && !c.second.reported; });
}

void interrupt_foreground_children(session_ptr self) {
  for (auto& [id, child] : self->state.children)
    if (child.waiting) {
      auto result = error_result("[interrupted: agent " + id + " was stopped]");
      result.exit_code = 130;
      answer_launch(child, std::move(result));
      caf::anon_send(child.actor, interrupt_atom::value);
    }
}

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

void on_child_down(session_ptr self, const caf::down_msg& down) {
  auto& st = self->state;
  // A child left to finish after this session ended: one less to wait for.
  if (st.detached_children.erase(down.source) > 0) {
    end_wait_done(self);
    return;
  }
  for (auto& [id, child] : st.children) {
    if (child.actor.address() != down.source || !child.running)
      continue;
    // It stopped without reporting its end: a crash, or a kill.
    task_notification n;
    n.id = new_message_id();
    n.source = "agent";
    n.task_id = id;
    n.status = "failed";
    n.description = child.description;
    n.text = "the agent stopped unexpectedly: " + plain_words(self->system(), down.reason);
    n.sent_at_us = now_us();
    accept_notification(self, std::move(n));
    return;
  }
}

void finish_agents(session_ptr self, terminal_reason reason, const std::string& error) {
  auto& st = self->state;
  // Background children: stopped, or left to finish into this session's durable queue.
  for (auto& [id, child] : st.children) {
    if (!child.running)
      continue;
    if (child.waiting)
      answer_launch(child, error_result("[the parent session ended]"));
    if (st.config.stop_children_on_end) {
      self->send_exit(child.actor, caf::exit_reason::user_shutdown);
      continue;
    }
    // Left to finish: detached (its end goes to this session's durable queue), and waited for,
    // so that this process lives until it is done and an interrupt can still stop it.
    self->request(child.actor, std::chrono::seconds{10}, control_atom::value,
                  std::string{"detach"}, std::string{})
      .then([](const std::string&) {}, [](caf::error&) {});
    st.detached_children.insert(child.actor.address());
    ++st.end_waits;
  }
  // Notifications taken but not yet logged are written back for the next resume.
  std::vector<message> undelivered = std::exchange(st.pending_notifications, {});
  for (auto& input : st.queue)
    if (input.origin == "task-notification")
      undelivered.push_back(input);
  st.queue.clear();
  for (auto& m : undelivered) {
    if (st.queued_from_file.count(m.id))
      continue; // still in queue.jsonl: it is read again on resume
    auto original = st.untaken_notifications.find(m.id);
    if (original == st.untaken_notifications.end())
      continue; // every notification taken is recorded there until it is logged
    self->send(st.config.disk, append_atom::value, queue_path(st).string(), original->second);
  }
  if (!st.config.parent && !st.detached)
    return;
  // A subagent reports its end to its parent; a parent that has ended finds it in its
  // durable queue when it is resumed.
  task_notification n;
  n.id = new_message_id();
  n.source = "agent";
  n.task_id = st.config.session_id;
  n.status = status_for(reason);
  n.description = st.config.description;
  // The answers of earlier jobs first (a prompt sent while it ran), then the last one.
  auto earlier = st.turn_answers;
  if (!earlier.empty() && earlier.back() == st.last_assistant_text)
    earlier.pop_back();
  std::string before;
  for (auto& answer : earlier)
    before += "[the answer to an earlier prompt]\n" + answer + "\n\n";
  // An agent that did not complete says why first — its terminal reason and error — then what
  // it last said, so that its parent can tell a refused permission from a step cap or a crash.
  bool done = reason == terminal_reason::completed || reason == terminal_reason::backgrounded;
  auto why = done ? std::string{}
                  : std::string{"[the agent ended "} + to_string(reason) +
                      (error.empty() ? "" : ": " + error) + "]";
  auto last = st.last_assistant_text;
  n.text = before + (done ? (last.empty() ? error : last)
                          : why + (last.empty() ? "" : "\nIts last reply:\n" + last));
  n.usage = st.usage;
  n.cost_usd = st.info.cost_usd;
  n.sent_at_us = now_us();
  auto write_to_queue = [=] {
    self->send(self->state.config.disk, append_atom::value, self->state.config.parent_queue.string(),
               n);
  };
  if (st.detached) {
    write_to_queue(); // the parent has ended: it reads this when it is resumed
    return;
  }
  ++st.end_waits;
  self->request(st.config.parent, std::chrono::seconds{10}, notify_atom::value, n)
    .then(
      [=](bool delivered) {
        if (!delivered)
          write_to_queue();
        end_wait_done(self);
      },
      [=](caf::error&) {
        write_to_queue();
        end_wait_done(self);
      });
}

} // namespace troupe
