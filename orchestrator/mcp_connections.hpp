#pragma once
// The MCP servers of one run (or fleet): the process-wide ones started once, at the start,
// while the session starts; a bounded wait for their start-up before the first model request;
// each agent's set (the shared actors, and its own for servers of scope "agent"); their end.

#include <chrono>
#include <functional>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/http_engine.hpp"
#include "actors/mcp_server.hpp"

namespace caf {
class actor_system;
}

namespace troupe {

/// What the servers of a run are started with beside their configurations.
struct mcp_start_options {
  std::filesystem::path workspace;
  child_environment environment;
  std::shared_ptr<const sandbox_policy> sandbox;
  std::optional<http_engine> http;
  /// The engine was started for the servers alone: stop() stops it too (a running engine
  /// would keep the actor system from ending).
  bool own_http = false;
  /// The stream-json client that carries the messages of servers of transport "sdk".
  stream_client_actor client;
  /// Start-up's bound (MCP_TIMEOUT) and a call's (MCP_TOOL_TIMEOUT).
  std::chrono::milliseconds startup_timeout{30000};
  std::chrono::milliseconds call_timeout{600000};
  /// TROUPE_PROCESS_OWNER prefix of the servers' processes.
  std::string owner;
};

/// MCP_TIMEOUT and MCP_TOOL_TIMEOUT (milliseconds, Claude Code's variables) over the defaults;
/// the error names a value that is not a positive number.
expected<bool> read_mcp_timeouts(mcp_start_options& options);

/// The servers of one run.
class mcp_connections {
public:
  /// Starts the actors of the process-wide servers now; those of scope "agent" start with each
  /// agent (attach).
  mcp_connections(caf::actor_system& sys, std::vector<mcp_server_config> servers,
                  mcp_start_options options);
  ~mcp_connections();
  mcp_connections(const mcp_connections&) = delete;
  mcp_connections& operator=(const mcp_connections&) = delete;

  bool empty() const { return configs_.empty(); }
  const std::vector<mcp_server_config>& configs() const { return configs_; }

  /// Waits until every process-wide server has started or failed, at most the start-up bound
  /// from when they were started, or until `stop` says so (a signal came: looked at every
  /// 100 ms); returns each server's state in configuration order (one still starting, or of
  /// scope "agent", as pending).
  std::vector<mcp_server_report> wait_for_startup(caf::actor_system& sys,
                                                  const std::function<bool()>& stop = {}) const;

  /// The servers for one agent: the process-wide actors, and new ones of its own for scope
  /// "agent" (`owned`, stopped with its executor; tagged `owner`).
  struct agent_servers {
    std::map<std::string, mcp_server_actor> servers;
    std::vector<mcp_server_actor> owned;
  };
  agent_servers attach(caf::actor_system& sys, const std::string& owner) const;

  /// The process-wide servers' actors, by name.
  const std::map<std::string, mcp_server_actor>& shared() const { return shared_; }

  /// Stops the process-wide servers (their processes are killed with their groups), and the
  /// engine started for them.
  void stop();

private:
  mcp_server_setup setup_for(const mcp_server_config& config, const std::string& owner) const;

  std::vector<mcp_server_config> configs_;
  mcp_start_options options_;
  std::map<std::string, mcp_server_actor> shared_;
  std::chrono::steady_clock::time_point started_;
};

/// system/init's "mcp_servers": [{"name", "status"}] as Claude Code lists them.
nlohmann::json mcp_init_entries(const std::vector<mcp_server_report>& reports);

/// `troupe mcp list` and `/mcp`: each server, its transport, where it was configured, its
/// status (and why it failed) and its tools.
std::string describe_mcp_servers(const std::vector<mcp_server_config>& configs,
                                 const std::vector<mcp_server_report>& reports, bool with_tools);

} // namespace troupe
