#pragma once

#include "tools/tool_spec.hpp"

namespace troupe {

/// Returns the `task` tool: launch a subagent (foreground or background) or resume one.
tool_spec task_tool();

} // namespace troupe
