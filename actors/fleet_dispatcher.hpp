#pragma once
// The fleet dispatcher: runs a fleet's tasks as top-level sessions of this process, at most N at
// once, within token and cost budgets, and appends one result line per task as it ends. See
// fleet_dispatcher_actor in protocol/interfaces.hpp for the messages it takes.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocol/expected.hpp"
#include "protocol/interfaces.hpp"
#include "store/fleet_results.hpp"
#include "store/fleet_tasks.hpp"

namespace caf {
class actor_system;
}

namespace troupe {

/// How far a fleet is (this run's tasks and the results of earlier runs together).
struct fleet_progress {
  int64_t total = 0;
  int64_t completed = 0;
  /// Ended in another state, could not start, or invalid.
  int64_t failed = 0;
  /// Not started for the budget.
  int64_t budget = 0;
  /// Left without a result for a rerun: could not run now (see fleet_launch::not_now).
  int64_t left = 0;
  int64_t running = 0;
  int64_t queued = 0;
  /// Tasks that got their result in this run (the rate and the ETA count these).
  int64_t ended_here = 0;
  /// This run's tokens and cost (the budgets count these).
  token_usage usage;
  double cost_usd = 0;
  bool cost_known = true;
  int64_t elapsed_ms = 0;
  /// Ctrl+C: nothing starts any more, the running tasks are being interrupted.
  bool stopping = false;
  /// The budget is spent: nothing starts any more.
  bool budget_spent = false;
};

/// A launched task: its session, spawned but not started (the dispatcher subscribes, then
/// starts it), and what to call once it has ended (it keeps what the agent's subagents are
/// made from alive until then).
struct fleet_launch {
  session_actor session;
  std::function<void()> ended;
  /// No session: the task cannot run now for a reason that may pass (its session runs in
  /// another process, the disk or the descriptors ran out). It gets no result line, so a rerun
  /// runs it; this says why.
  std::string not_now;
};

/// Launches a task; an error is the task's result.
using fleet_launcher =
  std::function<expected<fleet_launch>(caf::actor_system&, const fleet_task&)>;

/// A task that is already over without running: its result line, written as the task's turn
/// comes (a session that ended before its result was written, a task that cannot run).
using fleet_settled = std::function<std::optional<std::string>(const fleet_task&)>;

struct fleet_dispatcher_config {
  /// Names the tasks' sessions (task_session_id).
  std::string fleet_id;
  std::vector<fleet_task> tasks;
  size_t concurrency = 16;
  /// 0: no cap. Tokens count input, output and cache tokens together.
  int64_t budget_tokens = 0;
  double budget_usd = 0;
  fleet_launcher launch;
  /// Asked first, before each launch: why the task cannot run now (its session runs in another
  /// process), empty when it can. Such a task gets no line and is left for a rerun.
  std::function<std::string(const fleet_task&)> busy;
  /// Asked next; a line it returns is written instead of launching.
  fleet_settled settled;
  fleet_results_writer results;
  /// Each result line as written (stream-json echoes it on stdout).
  std::function<void(const std::string& line)> on_result;
  /// Every `progress_every`, and once at the end (the last report: `on_end`).
  std::function<void(const fleet_progress&)> on_progress;
  std::chrono::milliseconds progress_every{2000};
  std::function<void(const fleet_progress&)> on_end;
  /// What earlier runs of the fleet already have results for.
  fleet_progress start;
};

/// The result line of a task that ran: terminal reason, result, counts, usage, cost, time.
std::string fleet_result_line(const fleet_task& task, const session_ended_event& ended);

/// The result line of a task that did not run: `error` says why ("budget", …).
std::string fleet_error_line(const fleet_task& task, const std::string& session_id,
                             const std::string& error);

fleet_dispatcher_actor spawn_fleet_dispatcher(caf::actor_system& sys,
                                              std::shared_ptr<fleet_dispatcher_config> config);

} // namespace troupe
