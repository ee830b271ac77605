#pragma once
// The explicit, serialisable state of one session's loop, and how a run can end.

#include <cstdint>
#include <string>

#include <caf/meta/type_name.hpp>
#include <nlohmann/json.hpp>

#include "protocol/json_inspect.hpp"

namespace troupe {

/// Why a session's run ended. Each is a stream-json result and an exit code of `troupe run`.
enum class terminal_reason : uint8_t {
  completed,          ///< the queue is empty and the last reply held no runnable tool
  max_turns,          ///< the step cap was reached while the model still wanted tools
  interrupted,        ///< the user (or a signal) interrupted the run
  permission_blocked, ///< a tool was declined and no alternative remained
  error,              ///< an unrecoverable fault: model error, exhausted script, I/O
  backgrounded,       ///< the run was moved to the background and detached
  max_budget,         ///< the run's cost reached its cap (--max-budget-usd)
  hook_stopped,       ///< an external hook answered "continue": false (its stopReason the error)
};

/// Returns the wire name of a terminal reason ("completed", "max_turns", …).
const char* to_string(terminal_reason r);

/// Returns the exit code `troupe run` uses for a terminal reason.
int exit_code_for(terminal_reason r);

/// Why the loop moved from one step (or turn) to the next.
enum class transition_reason : uint8_t {
  none,            ///< nothing has happened yet
  tool_round,      ///< the reply held runnable tools: another step follows
  structural_stop, ///< the reply held no runnable tool: the turn ends
  max_steps,       ///< the step cap ended the turn
  interrupted,     ///< an interrupt ended the step
  model_error,     ///< the model failed; the run ends
  next_turn,       ///< a new input started a turn
  completed,       ///< the model called the complete tool
};

/// Returns the wire name of a transition reason.
const char* to_string(transition_reason r);

/// Bookkeeping for automatic compaction (used by context management).
struct auto_compact_tracking {
  bool compacted = false;
  int32_t turns_since_compact = 0;
  int32_t consecutive_failures = 0;

  friend bool operator==(const auto_compact_tracking& a, const auto_compact_tracking& b) {
    return a.compacted == b.compacted && a.turns_since_compact == b.turns_since_compact &&
           a.consecutive_failures == b.consecutive_failures;
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, auto_compact_tracking& x) {
  return f(caf::meta::type_name("auto_compact_tracking"), x.compacted, x.turns_since_compact,
           x.consecutive_failures);
}

/// Everything the loop decides with; written to state.json after each step.
struct loop_state {
  int64_t messages_count = 0;
  int32_t turn_count = 0;
  /// Steps taken in the current turn (the cap applies per turn).
  int32_t step_count = 0;
  /// Steps taken over the whole session.
  int64_t total_steps = 0;
  auto_compact_tracking auto_compact;
  int32_t max_output_recovery_count = 0;
  bool has_attempted_reactive_compact = false;
  bool stop_hook_active = false;
  transition_reason transition = transition_reason::none;
  /// The agent's task list, as its last successful todo call gave it.
  nlohmann::json todos = nlohmann::json::array();

  friend bool operator==(const loop_state& a, const loop_state& b) {
    return a.messages_count == b.messages_count && a.turn_count == b.turn_count &&
           a.step_count == b.step_count && a.total_steps == b.total_steps &&
           a.auto_compact == b.auto_compact &&
           a.max_output_recovery_count == b.max_output_recovery_count &&
           a.has_attempted_reactive_compact == b.has_attempted_reactive_compact &&
           a.stop_hook_active == b.stop_hook_active && a.transition == b.transition &&
           a.todos == b.todos;
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, loop_state& x) {
  return f(caf::meta::type_name("loop_state"), x.messages_count, x.turn_count, x.step_count,
           x.total_steps, x.auto_compact, x.max_output_recovery_count,
           x.has_attempted_reactive_compact, x.stop_hook_active, x.transition, x.todos);
}

void to_json(nlohmann::json& j, const terminal_reason& x);
void from_json(const nlohmann::json& j, terminal_reason& x);
void to_json(nlohmann::json& j, const transition_reason& x);
void from_json(const nlohmann::json& j, transition_reason& x);
void to_json(nlohmann::json& j, const auto_compact_tracking& x);
void from_json(const nlohmann::json& j, auto_compact_tracking& x);
void to_json(nlohmann::json& j, const loop_state& x);
void from_json(const nlohmann::json& j, loop_state& x);

} // namespace troupe
