#pragma once
// Where a run's MCP servers come from, by Claude Code's rules: the settings files'
// "mcpServers", then the project's .mcp.json (only the servers the settings approve), then
// --mcp-config; a later source's server replaces an earlier one of the same name.
// --strict-mcp-config keeps only --mcp-config's.

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/run_settings_files.hpp"
#include "protocol/expected.hpp"
#include "tools/mcp_wire.hpp"

namespace troupe {

struct run_flags;

/// Returns a variable's value, nullopt when it is not set.
using variable_lookup = std::function<std::optional<std::string>(const std::string& name)>;

/// The servers a run starts, and what it says about the ones it leaves out.
struct mcp_configuration {
  /// In the order of their names.
  std::vector<mcp_server_config> servers;
  /// One line for each .mcp.json server no setting approves, naming the setting that would;
  /// for the user (stderr).
  std::vector<std::string> notices;
};

/// Gathers the servers of `settings` (read_settings's, in the order they apply), of
/// `workspace`'s .mcp.json and of `mcp_config` (merge_mcp_configs's {"mcpServers": …}; null when
/// no --mcp-config was given); `strict`: only mcp_config's. A .mcp.json server is started only
/// when the settings approve it ("enableAllProjectMcpServers": true, or its name in
/// "enabledMcpjsonServers") and never when "disabledMcpjsonServers" names it. ${VAR} and
/// ${VAR:-default} are expanded through `lookup` in every source's command, args, env values,
/// url and header values. A malformed source or entry is an error.
expected<mcp_configuration> gather_mcp_servers(const std::vector<settings_source>& settings,
                                               const std::filesystem::path& workspace,
                                               const nlohmann::json& mcp_config, bool strict,
                                               const variable_lookup& lookup);

/// The run's servers: its settings files, `workspace`'s .mcp.json, --mcp-config and
/// --strict-mcp-config, variables looked up through `lookup`.
expected<mcp_configuration> resolve_mcp_servers(const run_flags& flags,
                                                const std::filesystem::path& workspace,
                                                const variable_lookup& lookup);

/// Looks a variable up in this process's environment.
std::optional<std::string> process_variable(const std::string& name);

} // namespace troupe
