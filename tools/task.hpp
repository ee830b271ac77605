#pragma once

#include "protocol/agent_type.hpp"
#include "tools/tool_spec.hpp"

namespace troupe {

/// Returns the `task` tool: launch a subagent (foreground or background) or resume one; its
/// description lists the custom `types` a launch may name as `subagent_type`.
tool_spec task_tool(const agent_types& types = {});

} // namespace troupe
