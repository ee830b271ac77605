#pragma once

#include "tools/tool_spec.hpp"

namespace troupe {

/// Returns the `write` tool (block names `write` and gptme's `save`): write a whole file,
/// creating parent directories.
tool_spec write_tool();

} // namespace troupe
