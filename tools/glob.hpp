#pragma once

#include "tools/tool_spec.hpp"

namespace troupe {

/// Returns the `glob` tool: files whose path matches a pattern, newest first.
tool_spec glob_tool();

} // namespace troupe
