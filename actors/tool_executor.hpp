#pragma once
// The tool executor: validates and runs one session's tool calls.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "protocol/interfaces.hpp"
#include "tools/registry.hpp"
#include "tools/tool_spec.hpp"

namespace caf {
class actor_system;
}

namespace troupe {

/// Spawns a tool executor for one session. Unknown tools and bad input become error
/// results; process tools run as children whose groups are killed on timeout or cancel. Background
/// tasks the session's end stops are written to its durable queue through `disk`. A call of an
/// MCP tool (mcp__<server>__<tool>) goes to that server's actor in `mcp_servers`; the servers
/// in `owned` (the agent's own) are stopped when the executor ends.
tool_executor_actor spawn_tool_executor(caf::actor_system& sys,
                                        std::shared_ptr<const tool_registry> registry,
                                        tool_context context, disk_io_actor disk,
                                        std::map<std::string, mcp_server_actor> mcp_servers = {},
                                        std::vector<mcp_server_actor> owned = {});

} // namespace troupe
