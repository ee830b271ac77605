#pragma once
// One MCP server's actor: it owns the connection (a child process speaking JSON-RPC lines on
// its stdin and stdout, or Streamable HTTP through the process's HTTP engine), starts it,
// initializes it, keeps its tool list, carries out calls, and starts it again after it died,
// a bounded number of times. Nothing it waits for blocks an agent: a call to a slow server is
// a pending request, a dead one an error result.

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "actors/http_engine.hpp"
#include "protocol/interfaces.hpp"
#include "tools/child_process.hpp"
#include "tools/mcp_wire.hpp"

namespace caf {
class actor_system;
}

namespace troupe {

class sandbox_policy;

/// What a server's actor is started with.
struct mcp_server_setup {
  mcp_server_config config;
  /// The program of a stdio server as found on PATH (absolute), or empty when it was not
  /// found: the server then fails to start, saying so.
  std::string program;
  /// Where a stdio server starts when its configuration names no cwd: the workspace.
  std::filesystem::path workspace;
  /// Variables its process gets over troupe's environment (TROUPE_HOME, …), under its own.
  child_environment environment;
  /// TROUPE_PROCESS_OWNER of its process: what it leaves behind is killed with it.
  std::string owner;
  /// The walls of its process (the run's sandbox); null: none.
  std::shared_ptr<const sandbox_policy> sandbox;
  /// Carries an http server's requests; unset: an http server fails to start, saying why.
  std::optional<http_engine> http;
  /// Carries an sdk server's messages (the stream-json client it lives in).
  stream_client_actor client;
  /// How long start-up (the process, initialize, tools/list) may take before the server is
  /// reported failed (MCP_TIMEOUT).
  std::chrono::milliseconds startup_timeout{30000};
  /// How long a tool call may go without an answer or a progress notification (MCP_TOOL_TIMEOUT).
  std::chrono::milliseconds call_timeout{600000};
  /// How many times in a row a server that died is started again (on the next call), with no
  /// successful call between, before it is reported failed for good.
  int max_restarts = 3;
  /// clientInfo.version in initialize.
  std::string client_version;
};

/// A server's state as `troupe mcp list` and /mcp show it: " - STATUS" (with why it failed,
/// or how many tools and which server), then, `with_tools`, a line per tool.
std::string describe_mcp_report(const mcp_server_report& report, bool with_tools);

/// Spawns the actor, which starts the server at once.
mcp_server_actor spawn_mcp_server(caf::actor_system& sys, mcp_server_setup setup);

} // namespace troupe
