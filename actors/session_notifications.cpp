// The session's task notifications and control from other processes: the delivery rules,
// the durable queue, and the commands of the control endpoint.

#include <algorithm>
#include <chrono>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include "store/ids.hpp"
#include "store/notification_queue.hpp"
#include "actors/session_state.hpp"
#include "tools/tool_spec.hpp"

namespace troupe {

message notification_message(const task_notification& n) {
  message m;
  m.id = n.id.empty() ? new_message_id() : n.id;
  m.role = role::user;
  m.origin = message_origin::task_notification;
  m.content = notification_text(n);
  m.timestamp_ms = now_ms();
  m.meta = {{"source", n.source},       {"task_id", n.task_id},   {"status", n.status},
            {"urgent", n.urgent},       {"sent_at_us", n.sent_at_us},
            {"received_at_us", now_us()}};
  if (!n.reason.empty())
    m.meta["reason"] = n.reason;
  return m;
}

bool accept_notification(session_ptr self, task_notification n) {
  auto& st = self->state;
  if (st.phase == session_phase::ended)
    return false;
  if (n.id.empty())
    n.id = new_message_id();
  if (!st.inbox.take_notification(n))
    return true; // delivered before (a queue entry read again after a resume)
  auto input = notification_message(n);
  spdlog::debug("session {}: notification {} from {} ({} us after it was sent)",
                st.config().session_id, n.id, n.source,
                n.sent_at_us > 0 ? now_us() - n.sent_at_us : 0);
  switch (st.phase) {
    case session_phase::created:
      // News goes ahead of the prompts queued before the start, after earlier news.
      st.inbox.queue_news(std::move(input));
      break;
    case session_phase::idle:
      if (!n.urgent && news_waits(st)) {
        std::vector<message> news;
        news.push_back(std::move(input)); // moved, not copied: it may be a MiB
        wait_for_more_news(self, std::move(news));
      } else {
        enqueue_first(self, std::move(input));
      }
      break;
    default:
      // Busy: in before the next model call, or first in the next turn. Urgent: the step
      // stops now and the turn that follows starts with it.
      st.inbox.hold(std::move(input));
      if (n.urgent)
        interrupt_for_news(self);
      break;
  }
  return true;
}

bool news_waits(const session_state& st) {
  auto since = std::chrono::steady_clock::now() - st.last_news_turn;
  return st.config().news_window.count() > 0 && since < st.config().news_window;
}

void wait_for_more_news(session_ptr self, std::vector<message> news) {
  auto& st = self->state;
  // News goes ahead of the prompts queued, after earlier news.
  st.inbox.queue_news(std::move(news));
  if (st.news_serial == 0) {
    st.news_serial = ++st.idle_timers;
    self->delayed_send(self, st.config().news_window, due_atom::value, st.news_serial);
  }
}

bool log_news(session_ptr self, std::vector<message> news) {
  auto& st = self->state;
  size_t shown = 0;
  for (auto& m : news) {
    const auto* original = st.inbox.original(m.id);
    // Only results task_output can still return: an agent's or a task's of this run, never
    // one read back from the durable queue (its agent is gone with the run that launched it).
    bool summable = original != nullptr &&
                    (original->source == "agent" || original->source == "shell") &&
                    !st.inbox.from_file(m.id);
    if (summable && shown + m.content.size() > st.config().notification_budget && shown > 0) {
      // Many results at once: a line each from here on; the whole result stays with the agent
      // or task (task_output).
      m.content = notification_summary(*original);
      m.meta["summarized"] = true;
    }
    shown += m.content.size();
    if (!append_message(self, std::move(m)))
      return false;
  }
  return true;
}

void read_durable_queue(session_ptr self, bool from_start, std::function<void(size_t)> done) {
  auto& st = self->state;
  auto path = queue_path(st).string();
  self->request(st.config().disk, caf::infinite, read_atom::value, path, from_start)
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
          if (s.inbox.awaiting_log(n.id) && s.phase != session_phase::ended)
            continue; // taken by an earlier read, not logged yet: it stays in the file
          if (s.inbox.taken(n.id) || s.phase == session_phase::ended) {
            known.push_back(n.id); // delivered before; an ended session leaves the rest
            continue;
          }
          s.inbox.read_from_file(n.id);
          accept_notification(self, std::move(n));
          ++taken;
        }
        if (s.phase == session_phase::ended)
          known.clear(); // undelivered: they stay for the next resume
        else
          for (auto& id : known)
            s.inbox.forget_from_file(id);
        if (!known.empty())
          self->send(s.config().disk, release_atom::value, path, known);
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
  if (st.inbox.logged(m.id))
    self->send(st.config().disk, release_atom::value, queue_path(st).string(),
               std::vector<std::string>{m.id});
}

caf::result<control_reply> run_control(session_ptr self, control_command command,
                                       const std::string& arg) {
  auto& st = self->state;
  if (command == control_command::poke || command == control_command::urgent) {
    auto promise = self->make_response_promise<control_reply>();
    read_durable_queue(self, false, [=](size_t taken) mutable {
      promise.deliver(control_ok("delivered " + std::to_string(taken) + " notification(s)"));
    });
    return promise;
  }
  if (command == control_command::interrupt)
    return control_ok(request_interrupt(self));
  if (command == control_command::detach) {
    // The parent has ended and lets this agent finish: its end goes to the parent's queue.
    if (st.parent) {
      self->demonitor(st.parent.address());
      st.parent = agent_parent_actor{};
    }
    if (!st.detached) {
      st.detached = true;
      publish_notice(self, "detached",
                     "the parent session ended; this agent finishes on its own and leaves its "
                     "result in the parent's queue");
    }
    return control_ok("detached");
  }
  if (command == control_command::input) {
    // From a parent resuming this agent while it runs: the prompt joins the queue, unless the
    // agent has just ended (the parent then continues it from its transcript).
    if (st.phase == session_phase::ended)
      return control_error("the agent has ended");
    accept_input(self, make_input(arg, message_origin::parent));
    return control_ok("queued");
  }
  if (command == control_command::background || command == control_command::interrupt_agent ||
      command == control_command::notify_agent) {
    // Its subagents belong to its supervisor, which routes the command down the tree.
    if (!st.agents)
      return control_error("no agent '" + arg + "' in session " + st.config().session_id);
    auto promise = self->make_response_promise<control_reply>();
    self->request(st.agents, std::chrono::seconds{10}, control_atom::value, command, arg)
      .then([=](const control_reply& answer) mutable { promise.deliver(answer); },
            [=](caf::error& err) mutable {
              promise.deliver(control_error(self->system().render(err)));
            });
    return promise;
  }
  if (command == control_command::end_input) {
    st.input_closed = true;
    if (st.phase == session_phase::idle)
      next_turn(self); // nothing left: the session ends now
    return control_ok("input closed");
  }
  if (command == control_command::permission_mode) {
    auto mode = parse_permission_mode(arg);
    if (!mode)
      return control_error("unknown permission mode '" + arg +
                           "': use default, accept-edits, plan, bypass or dont-ask");
    st.mode_override = *mode; // the next step judges its calls by it
    return control_ok(to_string(*mode));
  }
  if (command == control_command::model) {
    if (arg.empty())
      return control_error("no model named");
    if (st.phase == session_phase::idle) {
      if (auto failed = change_model(self, arg, {}); !failed.empty())
        return control_error("cannot switch to " + arg + ": " + failed);
      return control_ok(st.current_model.name);
    }
    st.pending_model = arg; // a step may be running on the current one: after the turn
    return control_ok(arg);
  }
  if (command == control_command::stop_task) {
    tool_call call;
    call.id = "stop_" + arg;
    call.name = "task_stop";
    call.input = {{"task_id", arg}};
    bool agent = arg.rfind("agent_", 0) == 0;
    if (agent && !st.agents)
      return control_error("no agent '" + arg + "' in session " + st.config().session_id);
    auto promise = self->make_response_promise<control_reply>();
    auto answer = [=](const tool_result& result) mutable {
      promise.deliver(result.is_error ? control_error(result.output) : control_ok(result.output));
    };
    auto failed = [=](caf::error& err) mutable {
      promise.deliver(control_error(self->system().render(err)));
    };
    if (agent)
      self->request(st.agents, std::chrono::seconds{10}, execute_atom::value, call)
        .then(answer, failed);
    else
      self->request(st.executor, std::chrono::seconds{10}, execute_atom::value, call)
        .then(answer, failed);
    return promise;
  }
  if (command == control_command::context_usage) {
    auto window = st.window.budget().limits.context_window;
    auto used = st.window.projected_tokens();
    nlohmann::json usage = {{"totalTokens", used},
                            {"maxTokens", window},
                            {"percentage", window > 0 ? 100.0 * double(used) / double(window) : 0.0},
                            {"model", st.current_model.name}};
    return control_ok(usage.dump());
  }
  return control_error("a session does not take the control command '" +
                       std::string{to_string(command)} + "'");
}

} // namespace troupe
