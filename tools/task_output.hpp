#pragma once

#include "tools/tool_spec.hpp"

namespace troupe {

/// Returns the `task_output` tool: what a background task printed, waiting for it if asked.
tool_spec task_output_tool();

} // namespace troupe
