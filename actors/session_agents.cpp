// The session's side of its subagents (the agent supervisor owns them): their ends taken as
// notifications, what becomes of them when the session ends, and this session's own end told
// to its parent.

#include <algorithm>
#include <chrono>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include "store/ids.hpp"
#include "actors/session_state.hpp"
#include "tools/tool_spec.hpp"

namespace troupe {

std::filesystem::path queue_path(const session_state& st) {
  return st.config().paths().queue();
}

bool waiting_for_children(const session_state& st) { return st.agents_running.awaited > 0; }

void interrupt_agents(session_ptr self) {
  if (self->state.agents)
    self->send(self->state.agents, interrupt_atom::value);
}

bool accept_agent_end(session_ptr self, agent_ended end) {
  auto& st = self->state;
  if (st.phase == session_phase::ended) {
    // Too late for this run: the next one reads it from the queue (the supervisor may be gone
    // by the time it would hear "no", so the session writes it itself).
    if (!end.answered)
      self->send(st.config().disk, append_atom::value, queue_path(st).string(),
                 std::move(end.notification));
    return true;
  }
  st.info.cost_usd += end.agent.cost_usd;
  st.run_cost_usd += end.agent.cost_usd;
  if (end.answered)
    return true;
  return accept_notification(self, std::move(end.notification));
}

void finish_agents(session_ptr self, terminal_reason reason, const std::string& error) {
  auto& st = self->state;
  // Background subagents: stopped, or left to finish into this session's durable queue while
  // this process lives on until they are done (and an interrupt can still stop them).
  if (st.agents) {
    ++st.end_waits;
    auto at_end = st.config().stop_children_on_end ? agents_at_end::stop : agents_at_end::finish;
    self->request(st.agents, std::chrono::seconds{10}, finish_atom::value, at_end)
      .then(
        [=](agent_list& left) {
          auto& s = self->state;
          s.agents_left = std::move(left.agents);
          if (at_end == agents_at_end::finish && !s.agents_left.empty() && !s.waiting_for_agents) {
            s.waiting_for_agents = true; // until the supervisor quits
            ++s.end_waits;
          }
          end_wait_done(self);
        },
        [=](caf::error&) { end_wait_done(self); });
  }
  // Notifications taken but not yet logged are written back for the next resume.
  for (auto& n : st.inbox.undelivered())
    self->send(st.config().disk, append_atom::value, queue_path(st).string(), n);
  if (!st.parent && !st.detached)
    return;
  // A subagent reports its end to its parent; a parent that has ended finds it in its
  // durable queue when it is resumed.
  task_notification n;
  n.id = new_message_id();
  n.source = "agent";
  n.task_id = st.config().session_id;
  bool done = reason == terminal_reason::completed || reason == terminal_reason::backgrounded;
  n.reason = to_string(reason);
  n.status = agent_status(n.reason);
  // Without an error, a blocked or capped agent still says what stopped it.
  const auto& cause = error.empty() && (reason == terminal_reason::permission_blocked ||
                                        reason == terminal_reason::max_turns)
                        ? st.turn.end_cause
                        : error;
  n.error = cause;
  n.description = st.config().description;
  // The answers of earlier jobs first (a prompt sent while it ran), then the last one.
  auto earlier = st.turn_answers;
  if (!earlier.empty() && earlier.back() == st.last_assistant_text)
    earlier.pop_back();
  std::string before;
  for (auto& answer : earlier)
    before += "[the answer to an earlier prompt]\n" + answer + "\n\n";
  // An agent that did not complete says why first — its terminal reason and error — then what
  // it last said, so that its parent can tell a refused permission from a step cap or a crash.
  auto why = done ? std::string{}
                  : std::string{"[the agent ended "} + to_string(reason) +
                      (cause.empty() ? "" : ": " + cause) + "]";
  auto last = st.last_assistant_text;
  n.text = before + (done ? (last.empty() ? cause : last)
                          : why + (last.empty() ? "" : "\nIts last reply:\n" + last));
  n.usage = st.usage;
  n.cost_usd = st.info.cost_usd;
  n.sent_at_us = now_us();
  auto write_to_queue = [=] {
    self->send(self->state.config().disk, append_atom::value, self->state.config().parent_queue.string(),
               n);
  };
  if (st.detached) {
    write_to_queue(); // the parent has ended: it reads this when it is resumed
    return;
  }
  ++st.end_waits;
  self->request(st.parent, std::chrono::seconds{10}, notify_atom::value, n)
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
