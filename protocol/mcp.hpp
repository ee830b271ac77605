#pragma once
// What an MCP server's actor tells the agents that use it: the server's state and its tools.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>
#include <nlohmann/json.hpp>

#include "protocol/json_inspect.hpp"
#include "protocol/shared_value.hpp"

namespace troupe {

/// Where a configured MCP server stands, as Claude Code's `system/init` spells it.
enum class mcp_status : uint8_t {
  pending,   ///< "pending": starting (its process or first request, initialize, tools/list)
  connected, ///< "connected": initialized, its tools listed
  failed,    ///< "failed": it could not be started, did not initialize in time, or died and
             ///< may not be restarted any more; `error` says why
};

/// Returns the spelling of a status ("pending", "connected", "failed").
const char* to_string(mcp_status s);

/// One tool a server offers, as its tools/list gave it.
struct mcp_tool {
  /// The server's own name for it; the model calls it mcp__<server>__<name>.
  std::string name;
  std::string description;
  /// Its inputSchema (a JSON Schema object).
  nlohmann::json input_schema = nlohmann::json::object();
  /// annotations.readOnlyHint: shown, never trusted for permissions (a server's word).
  bool read_only_hint = false;

  friend bool operator==(const mcp_tool& a, const mcp_tool& b) {
    return a.name == b.name && a.description == b.description &&
           a.input_schema == b.input_schema && a.read_only_hint == b.read_only_hint;
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, mcp_tool& x) {
  return f(caf::meta::type_name("mcp_tool"), x.name, x.description, x.input_schema,
           x.read_only_hint);
}

/// A server's state: sent to every subscriber when it changes (connected, its tools listed
/// again after notifications/tools/list_changed, failed, restarted).
struct mcp_server_report {
  /// Its name in the configuration (mcpServers' key).
  std::string server;
  mcp_status status = mcp_status::pending;
  /// Why it failed, or what went wrong last (a crash it was restarted after).
  std::string error;
  /// "stdio" or "http".
  std::string transport;
  /// serverInfo's name and version, and the protocol version agreed on.
  std::string server_name;
  std::string server_version;
  std::string protocol_version;
  /// Its tools, in the order it listed them; one copy however many agents hold it.
  shared_value<std::vector<mcp_tool>> tools;
  /// Counts the reports of this server: a later one replaces an earlier one.
  uint64_t revision = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, mcp_server_report& x) {
  return f(caf::meta::type_name("mcp_server_report"), x.server, x.status, x.error, x.transport,
           x.server_name, x.server_version, x.protocol_version, x.tools, x.revision);
}

/// The name the model calls a server's tool by: mcp__<server>__<tool>, each part with what is
/// not a letter, digit, '_' or '-' made '_' (Claude Code's rule), cut at 64 characters (the
/// providers' limit).
std::string mcp_tool_name(const std::string& server, const std::string& tool);

/// The server part of a name that starts with mcp__ ("fs" for mcp__fs__read_file); empty for
/// any other name.
std::string mcp_server_of(const std::string& tool_name);

} // namespace troupe
