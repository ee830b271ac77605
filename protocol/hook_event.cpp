#include "protocol/hook_event.hpp"

#include "protocol/json_enum.hpp"

namespace troupe {

namespace {

constexpr detail::enum_names<hook_event, 10> event_names{{
  {hook_event::session_start, "SessionStart"},
  {hook_event::user_prompt_submit, "UserPromptSubmit"},
  {hook_event::step_pre, "StepPre"},
  {hook_event::pre_tool_use, "PreToolUse"},
  {hook_event::post_tool_use, "PostToolUse"},
  {hook_event::generation_post, "GenerationPost"},
  {hook_event::stop, "Stop"},
  {hook_event::loop_continue, "LoopContinue"},
  {hook_event::pre_compact, "PreCompact"},
  {hook_event::session_end, "SessionEnd"},
}};

} // namespace

const char* to_string(hook_event e) { return detail::enum_to_name(event_names, e); }

expected<hook_event> parse_hook_event(const std::string& name) {
  for (auto& [value, spelling] : event_names)
    if (name == spelling)
      return value;
  std::string known;
  for (auto& [value, spelling] : event_names)
    known += (known.empty() ? "" : ", ") + std::string{spelling};
  return failure{"unknown hook event \"" + name + "\" (events: " + known + ")"};
}

bool is_tool_event(hook_event e) {
  return e == hook_event::pre_tool_use || e == hook_event::post_tool_use;
}

void to_json(nlohmann::json& j, const hook_event& x) { j = to_string(x); }

void from_json(const nlohmann::json& j, hook_event& x) {
  x = detail::enum_from_json(event_names, j, "hook event");
}

} // namespace troupe
