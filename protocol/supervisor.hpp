#pragma once
// What an agent supervisor and the owner of its agents say to each other. The supervisor owns
// child agents (spawns, monitors, caps, stops or detaches them); its owner is whoever launched
// them — a parent session today, a fleet tomorrow — and hears of every end.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>
#include <nlohmann/json_fwd.hpp>

#include "protocol/model.hpp"
#include "protocol/notification.hpp"

namespace troupe {

/// What a supervisor knows about one agent it owns.
struct agent_descriptor {
  std::string id;
  /// What it was launched for.
  std::string description;
  /// "running", or how it ended: "completed", "failed" or "stopped" (a notification's status).
  std::string state = "running";
  /// Why it ended, as its session.json says (`completed`, `max_turns`, `permission_blocked`,
  /// `error`, `interrupted`, …), or `crashed` when it stopped without saying; empty while it runs.
  std::string reason;
  /// The error it ended with, if any.
  std::string error;
  /// Its launch waits for its answer (a foreground call of the task tool).
  bool foreground = false;
  token_usage usage;
  double cost_usd = 0;
  /// Its final answer (or what it last said), once it ended.
  std::string result;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, agent_descriptor& x) {
  return f(caf::meta::type_name("agent_descriptor"), x.id, x.description, x.state, x.reason,
           x.error, x.foreground, x.usage, x.cost_usd, x.result);
}

/// An agent ended: told to the supervisor's owner for every end. `answered`: its result already
/// reached the model (a foreground call, a task_wait), so the notification is not delivered —
/// the owner only counts its cost.
struct agent_ended {
  agent_descriptor agent;
  task_notification notification;
  bool answered = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, agent_ended& x) {
  return f(caf::meta::type_name("agent_ended"), x.agent, x.notification, x.answered);
}

/// How many of a supervisor's agents run: sent to its owner whenever it changes.
struct agent_counts {
  /// Running in the background (no call waits for them).
  int32_t background = 0;
  /// Running, and their end not yet answered anywhere: a headless owner waits for their news.
  int32_t awaited = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, agent_counts& x) {
  return f(caf::meta::type_name("agent_counts"), x.background, x.awaited);
}

/// A list of agents (what /agents shows, the children a finishing owner stopped or left).
struct agent_list {
  std::vector<agent_descriptor> agents;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, agent_list& x) {
  return f(caf::meta::type_name("agent_list"), x.agents);
}

/// What an owner that ends asks of the agents still running.
enum class agents_at_end : uint8_t {
  stop,   ///< stop them (their ends go to the owner's durable queue)
  finish, ///< let them finish, detached (the supervisor lives until the last one ends)
};

/// The status an agent's notification carries for how it ended (`reason` as its session.json
/// says): "completed" (completed, backgrounded), "stopped" (interrupted) or "failed".
const char* agent_status(const std::string& reason);

void to_json(nlohmann::json& j, const agent_descriptor& x);
void from_json(const nlohmann::json& j, agent_descriptor& x);

} // namespace troupe
