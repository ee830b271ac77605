#pragma once

#include "tools/tool_spec.hpp"

namespace troupe {

/// Returns the `task_stop` tool: kill a background task.
tool_spec task_stop_tool();

} // namespace troupe
