#pragma once
// `troupe mcp list` and `troupe mcp get NAME`: the MCP servers a run in this workspace would
// start (settings files, approved .mcp.json servers, --mcp-config), each started and asked
// for its tools, as `claude mcp list` checks them.

#include <string>

#include "orchestrator/run_flags.hpp"

namespace CLI {
class App;
}

namespace troupe {

struct mcp_flags {
  /// --mcp-config, --strict-mcp-config, --settings, --setting-sources, --cwd.
  run_flags sources;
  std::string name;
};

/// The `mcp` command and its `list` and `get` subcommands.
struct mcp_commands {
  CLI::App* mcp = nullptr;
  CLI::App* list = nullptr;
  CLI::App* get = nullptr;
};

/// Adds `mcp list` and `mcp get NAME` to the command line.
mcp_commands add_mcp_command(CLI::App& app, mcp_flags& flags);

/// Returns the exit code: 0 once listed (`get`: 1 when the server failed to start), 2 for a
/// bad configuration or an unknown name.
int run_mcp(const mcp_flags& flags, bool get);

} // namespace troupe
