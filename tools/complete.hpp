#pragma once

#include "tools/tool_spec.hpp"

namespace troupe {

/// Returns the `complete` tool: the agent declares its task finished.
tool_spec complete_tool();

} // namespace troupe
