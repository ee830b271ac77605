#pragma once
// A task notification: news for a session from outside its loop — a background subagent or
// shell task that ended, or a message from another process (`troupe notify`).

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>
#include <nlohmann/json_fwd.hpp>

#include "protocol/json_inspect.hpp"
#include "protocol/model.hpp"

namespace troupe {

struct task_notification {
  /// Unique; becomes the id of the message that delivers it, so a resume never delivers twice.
  std::string id;
  /// "agent" (a subagent ended), "shell" (a background task ended) or "external" (notify).
  std::string source;
  /// The agent or task id; empty for external messages.
  std::string task_id;
  /// For tasks: "completed", "failed" or "stopped".
  std::string status;
  /// For agents: why it ended, as its session.json's state says ("max_turns", "error",
  /// "interrupted", "crashed" …); empty for tasks and external messages.
  std::string reason;
  /// For agents that ended with an error: its message.
  std::string error;
  /// What the task was for (the subagent's description, the command).
  std::string description;
  /// The subagent's final text, the task's exit summary, or the external message.
  std::string text;
  token_usage usage;
  /// What a subagent (and its own subagents) cost, in US dollars.
  double cost_usd = 0;
  /// Interrupts the current step and starts a turn with this message.
  bool urgent = false;
  /// When it was sent, in microseconds since the epoch (for latency measurements).
  int64_t sent_at_us = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, task_notification& x) {
  return f(caf::meta::type_name("task_notification"), x.id, x.source, x.task_id, x.status,
           x.reason, x.error, x.description, x.text, x.usage, x.cost_usd, x.urgent, x.sent_at_us);
}

/// What a read of a durable queue found: the entries not read before, in order.
struct queue_read {
  std::vector<task_notification> entries;
  /// Lines that were not notifications (skipped).
  int32_t bad_lines = 0;
  /// Set when the file could not be read at all.
  std::string error;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, queue_read& x) {
  return f(caf::meta::type_name("queue_read"), x.entries, x.bad_lines, x.error);
}

/// The text the model reads for a notification.
std::string notification_text(const task_notification& n);

/// One line in place of that text, when many results arrive at once: who, how it ended, what
/// it was for, and how to read the whole result (task_output).
std::string notification_summary(const task_notification& n);

void to_json(nlohmann::json& j, const task_notification& x);
void from_json(const nlohmann::json& j, task_notification& x);

} // namespace troupe
