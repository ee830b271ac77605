#pragma once

#include "tools/tool_spec.hpp"

namespace troupe {

/// Returns the `grep` tool: a regular-expression search over files.
tool_spec grep_tool();

} // namespace troupe
