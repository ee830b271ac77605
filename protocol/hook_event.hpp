#pragma once
// The events external hook commands attach to, spelled as the settings files name them (Claude
// Code's layout). Names are parsed where the settings are read; actors see only the enum.

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "protocol/expected.hpp"

namespace troupe {

/// An event of the loop at which external hook commands run. Each has one spelling (to_string).
enum class hook_event : uint8_t {
  session_start,      ///< "SessionStart": once, after set-up (stdout is context)
  user_prompt_submit, ///< "UserPromptSubmit": a prompt is logged (stdout is context)
  step_pre,           ///< "StepPre": before every step
  pre_tool_use,       ///< "PreToolUse": before a tool call (matched against the tool)
  post_tool_use,      ///< "PostToolUse": after a tool call (matched against the tool)
  generation_post,    ///< "GenerationPost": a model reply is logged, before its tools run
  stop,               ///< "Stop": a turn ends
  loop_continue,      ///< "LoopContinue": after Stop; messages become the next inputs
  pre_compact,        ///< "PreCompact": before a compaction
  session_end,        ///< "SessionEnd": once, after the terminal state is known
};

/// Every hook event, in the order the settings' error messages list them.
inline constexpr hook_event all_hook_events[] = {
  hook_event::session_start,   hook_event::user_prompt_submit, hook_event::step_pre,
  hook_event::pre_tool_use,    hook_event::post_tool_use,      hook_event::generation_post,
  hook_event::stop,            hook_event::loop_continue,      hook_event::pre_compact,
  hook_event::session_end};

/// Returns the settings' spelling of an event ("PreToolUse", "Stop", …).
const char* to_string(hook_event e);

/// Parses an event's spelling; an unknown name is an error that lists the known ones.
expected<hook_event> parse_hook_event(const std::string& name);

/// True for the events around a tool call, whose commands have a matcher.
bool is_tool_event(hook_event e);

void to_json(nlohmann::json& j, const hook_event& x);
void from_json(const nlohmann::json& j, hook_event& x);

} // namespace troupe
