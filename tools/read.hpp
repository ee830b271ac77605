#pragma once

#include "tools/tool_spec.hpp"

namespace troupe {

/// Returns the `read` tool: a file's lines, numbered, optionally a range of them.
tool_spec read_tool();

} // namespace troupe
