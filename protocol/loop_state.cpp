#include "protocol/loop_state.hpp"

#include <nlohmann/json.hpp>

#include "protocol/bounded_json.hpp"
#include "protocol/json_enum.hpp"

namespace troupe {

namespace {

// A required count; a float past the field's range is an error (converting it is undefined).
template <class T>
void read_count(const nlohmann::json& j, const char* key, T& out) {
  const auto& value = j.at(key);
  if (!number_fits<T>(value))
    throw nlohmann::json::type_error::create(302, std::string{key} + " is out of range", &j);
  value.get_to(out);
}

constexpr detail::enum_names<terminal_reason, 8> terminal_names{{
  {terminal_reason::completed, "completed"},
  {terminal_reason::max_turns, "max_turns"},
  {terminal_reason::interrupted, "interrupted"},
  {terminal_reason::permission_blocked, "permission_blocked"},
  {terminal_reason::error, "error"},
  {terminal_reason::backgrounded, "backgrounded"},
  {terminal_reason::max_budget, "max_budget"},
  {terminal_reason::hook_stopped, "hook_stopped"},
}};

constexpr detail::enum_names<transition_reason, 8> transition_names{{
  {transition_reason::none, "none"},
  {transition_reason::tool_round, "tool_round"},
  {transition_reason::structural_stop, "structural_stop"},
  {transition_reason::max_steps, "max_steps"},
  {transition_reason::interrupted, "interrupted"},
  {transition_reason::model_error, "model_error"},
  {transition_reason::next_turn, "next_turn"},
  {transition_reason::completed, "completed"},
}};

} // namespace

const char* to_string(terminal_reason r) { return detail::enum_to_name(terminal_names, r); }

const char* to_string(transition_reason r) { return detail::enum_to_name(transition_names, r); }

int exit_code_for(terminal_reason r) {
  switch (r) {
    case terminal_reason::completed:
    case terminal_reason::backgrounded:
      return 0;
    case terminal_reason::error:
    case terminal_reason::max_budget:
      return 1;
    case terminal_reason::max_turns:
      return 3;
    case terminal_reason::permission_blocked:
      return 4;
    case terminal_reason::interrupted:
      return 130;
    case terminal_reason::hook_stopped:
      return 5;
  }
  return 1;
}

void to_json(nlohmann::json& j, const terminal_reason& x) { j = to_string(x); }

void from_json(const nlohmann::json& j, terminal_reason& x) {
  x = detail::enum_from_json(terminal_names, j, "terminal reason");
}

void to_json(nlohmann::json& j, const transition_reason& x) { j = to_string(x); }

void from_json(const nlohmann::json& j, transition_reason& x) {
  x = detail::enum_from_json(transition_names, j, "transition reason");
}

void to_json(nlohmann::json& j, const auto_compact_tracking& x) {
  j = {{"compacted", x.compacted},
       {"turns_since_compact", x.turns_since_compact},
       {"consecutive_failures", x.consecutive_failures}};
}

void from_json(const nlohmann::json& j, auto_compact_tracking& x) {
  j.at("compacted").get_to(x.compacted);
  read_count(j, "turns_since_compact", x.turns_since_compact);
  read_count(j, "consecutive_failures", x.consecutive_failures);
}

void to_json(nlohmann::json& j, const loop_state& x) {
  j = {{"messages_count", x.messages_count},
       {"turn_count", x.turn_count},
       {"step_count", x.step_count},
       {"total_steps", x.total_steps},
       {"auto_compact", x.auto_compact},
       {"max_output_recovery_count", x.max_output_recovery_count},
       {"has_attempted_reactive_compact", x.has_attempted_reactive_compact},
       {"stop_hook_active", x.stop_hook_active},
       {"transition_reason", x.transition},
       {"todos", x.todos}};
}

void from_json(const nlohmann::json& j, loop_state& x) {
  read_count(j, "messages_count", x.messages_count);
  read_count(j, "turn_count", x.turn_count);
  read_count(j, "step_count", x.step_count);
  read_count(j, "total_steps", x.total_steps);
  j.at("auto_compact").get_to(x.auto_compact);
  read_count(j, "max_output_recovery_count", x.max_output_recovery_count);
  j.at("has_attempted_reactive_compact").get_to(x.has_attempted_reactive_compact);
  j.at("stop_hook_active").get_to(x.stop_hook_active);
  j.at("transition_reason").get_to(x.transition);
  x.todos = j.value("todos", nlohmann::json::array()); // absent in state files before todo
}

} // namespace troupe
