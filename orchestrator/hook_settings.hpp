#pragma once
// The "hooks" of a settings file, in Claude Code's layout:
// {"hooks": {"PreToolUse": [{"matcher": "shell", "hooks": [{"type": "command",
//                                                           "command": "…", "timeout": 60}]}]}}

#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/expected.hpp"
#include "protocol/hooks.hpp"

namespace troupe {

/// Reads the hook commands of one settings object; `file` names it in errors. An unknown event,
/// a command that is not a string, a type other than "command", a timeout that is not a
/// positive number of seconds or a matcher that is not a regular expression is an error.
expected<std::vector<hook_command>> parse_hook_settings(const nlohmann::json& settings,
                                                        const std::filesystem::path& file);

} // namespace troupe
