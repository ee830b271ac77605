#pragma once

#include "tools/tool_spec.hpp"

namespace troupe {

/// Returns the `save` tool: write a whole file, creating parent directories.
tool_spec save_tool();

} // namespace troupe
