#pragma once

#include "tools/tool_spec.hpp"

namespace troupe {

/// Returns the `task_output` tool: what a background task printed, waiting for it if asked.
tool_spec task_output_tool();

/// Returns the `task_stop` tool: kill a background task.
tool_spec task_stop_tool();

} // namespace troupe
