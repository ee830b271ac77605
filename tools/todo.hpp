#pragma once

#include <optional>
#include <string>

#include "tools/tool_spec.hpp"

namespace troupe {

/// Returns the `todo` tool: the agent's task list, replaced whole on each call.
tool_spec todo_tool();

/// Checks a `todos` array (objects with content and status pending|in_progress|completed).
/// Returns a message for the model when it does not fit.
std::optional<std::string> check_todos(const nlohmann::json& todos);

} // namespace troupe
