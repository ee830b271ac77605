// The session's task notifications and control from other processes: the delivery rules,
// the durable queue, and the commands of the control endpoint.

#include <algorithm>
#include <chrono>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include "actors/ids.hpp"
#include "actors/notification_queue.hpp"
#include "actors/session_state.hpp"
#include "tools/tool_spec.hpp"

namespace troupe {

message notification_message(const task_notification& n) {
  message m;
  m.id = n.id.empty() ? new_message_id() : n.id;
  m.role = role::user;
  m.origin = "task-notification";
  m.content = notification_text(n);
  m.timestamp_ms = now_ms();
  m.meta = {{"source", n.source},       {"task_id", n.task_id},   {"status", n.status},
            {"urgent", n.urgent},       {"sent_at_us", n.sent_at_us},
            {"received_at_us", now_us()}};
  return m;
}

bool accept_notification(session_ptr self, task_notification n) {
  auto& st = self->state;
  if (st.phase == session_phase::ended)
    return false;
  if (n.id.empty())
    n.id = new_message_id();
  if (!st.notification_ids.insert(n.id).second)
    return true; // delivered before (a queue entry read again after a resume)
  if (n.source == "agent") {
    if (auto c = st.children.find(n.task_id); c != st.children.end()) {
      auto& child = c->second;
      child.running = false;
      child.status = n.status;
      st.info.cost_usd += n.cost_usd;
      if (n.description.empty())
        n.description = child.description;
      if (child.waiting) {
        // A foreground launch: the answer is the call's result, not a notification.
        tool_result result;
        result.output = n.text.empty() ? "(the agent gave no final answer)" : n.text;
        result.is_error = n.status != "completed";
        answer_launch(child, std::move(result));
        return true;
      }
      if (child.reported)
        return true;
      child.reported = true;
    }
  }
  auto input = notification_message(n);
  st.untaken_notifications[n.id] = n;
  spdlog::debug("session {}: notification {} from {} ({} us after it was sent)",
                st.config.session_id, n.id, n.source,
                n.sent_at_us > 0 ? now_us() - n.sent_at_us : 0);
  switch (st.phase) {
    case session_phase::created: {
      // News goes ahead of the prompts queued before the start, after earlier news.
      auto first_prompt = std::find_if(st.queue.begin(), st.queue.end(), [](const message& m) {
        return m.origin != "task-notification";
      });
      st.queue.insert(first_prompt, std::move(input));
      break;
    }
    case session_phase::idle:
      enqueue_first(self, std::move(input));
      break;
    default:
      // Busy: in before the next model call, or first in the next turn. Urgent: the step
      // stops now and the turn that follows starts with it.
      st.pending_notifications.push_back(std::move(input));
      if (n.urgent) {
        st.urgent_pending = true;
        request_interrupt(self);
      }
      break;
  }
  return true;
}

void read_durable_queue(session_ptr self, bool from_start, std::function<void(size_t)> done) {
  auto& st = self->state;
  auto path = queue_path(st).string();
  self->request(st.config.disk, caf::infinite, read_atom::value, path, from_start)
    .then(
      [=](queue_read& read) {
        auto& s = self->state;
        if (!read.error.empty())
          publish_notice(self, "warning", read.error);
        if (read.bad_lines > 0)
          publish_notice(self, "warning",
                         std::to_string(read.bad_lines) +
                           " line(s) of " + path +
                           " that are no notification (torn, or longer than this session takes) "
                           "set aside in " + set_aside_path(path).string());
        size_t taken = 0;
        std::vector<std::string> known;
        for (auto& n : read.entries) {
          if (n.id.empty())
            n.id = new_message_id();
          if (s.untaken_notifications.count(n.id) && s.phase != session_phase::ended)
            continue; // taken by an earlier read, not logged yet: it stays in the file
          if (s.notification_ids.count(n.id) || s.phase == session_phase::ended) {
            known.push_back(n.id); // delivered before; an ended session leaves the rest
            continue;
          }
          s.queued_from_file.insert(n.id);
          accept_notification(self, std::move(n));
          ++taken;
        }
        if (s.phase == session_phase::ended)
          known.clear(); // undelivered: they stay for the next resume
        else
          for (auto& id : known)
            s.queued_from_file.erase(id);
        if (!known.empty())
          self->send(s.config.disk, release_atom::value, path, known);
        if (done)
          done(taken);
      },
      [=](caf::error& err) {
        publish_notice(self, "warning",
                       "cannot read " + path + ": " + self->system().render(err));
        if (done)
          done(0);
      });
}

void note_logged(session_ptr self, const message& m) {
  auto& st = self->state;
  st.untaken_notifications.erase(m.id);
  if (st.queued_from_file.erase(m.id) > 0)
    self->send(st.config.disk, release_atom::value, queue_path(st).string(),
               std::vector<std::string>{m.id});
}

caf::result<std::string> run_control(session_ptr self, const std::string& command,
                                     const std::string& arg) {
  auto& st = self->state;
  if (command == "poke" || command == "urgent") {
    auto promise = self->make_response_promise<std::string>();
    read_durable_queue(self, false, [=](size_t taken) mutable {
      promise.deliver("delivered " + std::to_string(taken) + " notification(s)");
    });
    return promise;
  }
  if (command == "interrupt")
    return request_interrupt(self);
  if (command == "detach") {
    // The parent has ended and lets this agent finish: its end goes to the parent's queue.
    if (st.config.parent) {
      self->demonitor(st.config.parent.address());
      st.config.parent = session_actor{};
    }
    if (!st.detached) {
      st.detached = true;
      publish_notice(self, "detached",
                     "the parent session ended; this agent finishes on its own and leaves its "
                     "result in the parent's queue");
    }
    return std::string{"detached"};
  }
  if (command == "input") {
    // From a parent resuming this agent while it runs: the prompt joins the queue, unless the
    // agent has just ended (the parent then continues it from its transcript).
    if (st.phase == session_phase::ended)
      return std::string{"error: the agent has ended"};
    accept_input(self, make_input(arg, "parent"));
    return std::string{"queued"};
  }
  if ((command == "interrupt-agent" || command == "notify-agent") &&
      arg.rfind("agents/", 0) != 0)
    return std::string{"error: " + command + " takes the agent's path, agents/X[/agents/Y…]"};
  if ((command == "background" || command == "interrupt-agent" || command == "notify-agent") &&
      arg.rfind("agents/", 0) == 0) {
    // An agent below this session, named by its path: agents/X/agents/Y goes to X as Y
    // (`background` takes a child's bare id), and `interrupt-agent agents/X` interrupts X.
    // A command of its own, not `interrupt` with an argument: a session run by an older
    // troupe, which ignores the argument, refuses it instead of interrupting itself.
    // `notify-agent agents/X` has X read its own durable queue (`troupe notify` appended to
    // it), so the notification takes the way of X's own `notify`, with its rules.
    auto rest = arg.substr(7);
    auto slash = rest.find('/');
    auto c = st.children.find(rest.substr(0, slash));
    bool to_child_itself = slash == std::string::npos && command != "background";
    if ((slash == std::string::npos && !to_child_itself) || c == st.children.end() ||
        !c->second.running)
      return std::string{"error: no running agent " + rest.substr(0, slash) + " in session " +
                         st.config.session_id};
    auto forwarded = !to_child_itself              ? command
                     : command == "interrupt-agent" ? std::string{"interrupt"}
                                                    : std::string{"poke"};
    auto inner = to_child_itself ? std::string{} : rest.substr(slash + 1);
    if (command == "background" && inner.rfind("agents/", 0) == 0 &&
        inner.find('/', 7) == std::string::npos)
      inner = inner.substr(7);
    auto promise = self->make_response_promise<std::string>();
    self->request(c->second.actor, std::chrono::seconds{5}, control_atom::value, forwarded, inner)
      .then([=](const std::string& answer) mutable { promise.deliver(answer); },
            [=](caf::error& err) mutable {
              promise.deliver("error: " + self->system().render(err));
            });
    return promise;
  }
  if (command == "background") {
    auto c = st.children.find(arg);
    if (c == st.children.end())
      return std::string{"error: no agent '" + arg + "' in this session (agents: " +
                         child_list(st) + ")"};
    if (!c->second.running)
      return std::string{"error: agent " + arg + " has already ended (" + c->second.status + ")"};
    if (!c->second.waiting)
      return std::string{"agent " + arg + " already runs in the background"};
    answer_launch(c->second,
                  tool_result{"Moved agent " + arg +
                                " to the background: it goes on, and you will get a "
                                "<task-notification> when it ends.",
                              false, 0, false});
    c->second.reported = false;
    return std::string{"moved agent " + arg + " to the background"};
  }
  return std::string{"error: unknown control command '" + command + "'"};
}

} // namespace troupe
