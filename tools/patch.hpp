#pragma once

#include "tools/tool_spec.hpp"

namespace troupe {

/// Returns the `patch` tool: gptme-style ORIGINAL/UPDATED blocks applied to one file.
tool_spec patch_tool();

} // namespace troupe
