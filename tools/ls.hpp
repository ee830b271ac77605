#pragma once

#include "tools/tool_spec.hpp"

namespace troupe {

/// Returns the `ls` tool: the entries of one directory.
tool_spec ls_tool();

} // namespace troupe
