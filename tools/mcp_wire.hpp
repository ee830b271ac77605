#pragma once
// The Model Context Protocol's wire format without I/O: a server's configuration entry, the
// JSON-RPC messages troupe sends (initialize, tools/list, tools/call, cancellation, ping's
// answer), what it reads back, and a tools/call result rendered into the tool result the
// model sees. The connection itself is actors/mcp_server's.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/expected.hpp"
#include "protocol/mcp.hpp"
#include "protocol/message.hpp"
#include "tools/tool_spec.hpp"

namespace troupe {

/// The protocol versions troupe speaks, newest first: it offers the first in initialize and
/// accepts any of them in the answer.
inline const std::vector<std::string> mcp_protocol_versions = {"2025-11-25", "2025-06-18",
                                                               "2025-03-26", "2024-11-05"};

/// How troupe reaches a server.
enum class mcp_transport : uint8_t {
  stdio, ///< a child process: JSON-RPC lines on its stdin and stdout, its stderr logged
  http,  ///< Streamable HTTP: each message POSTed, answered with JSON or an SSE stream
  sdk,   ///< inside a stream-json client (the Agent SDK's createSdkMcpServer): each message
         ///< goes through the client's control channel as an mcp_message request
};

/// Returns the spelling of a transport ("stdio", "http", "sdk").
const char* to_string(mcp_transport transport);

/// A JSON-RPC message as one line of JSON (invalid UTF-8 replaced, never a throw): what goes on
/// the wire.
std::string mcp_line(const nlohmann::json& message);

/// One entry of `mcpServers`, checked.
struct mcp_server_config {
  /// Its key in mcpServers.
  std::string name;
  mcp_transport transport = mcp_transport::stdio;
  /// stdio: the program (found on PATH when it has no '/'), its arguments, variables over
  /// troupe's environment, and where it starts (empty: the session's workspace).
  std::string command;
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
  std::filesystem::path cwd;
  /// http: the endpoint and the headers sent with every request (Authorization, …).
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  /// troupe's own key "scope": "process" (the default: every agent of the process shares one
  /// connection) or "agent" (each agent, subagents and fleet tasks included, starts its own).
  bool per_agent = false;
  /// Where it was configured, for `troupe mcp list`: "--mcp-config", ".mcp.json",
  /// "settings PATH".
  std::string source;
};

/// Checks one mcpServers entry: {"command", "args", "env", "cwd"} (type "stdio" or none),
/// {"type": "http" (or "streamable-http"), "url", "headers"}, or {"type": "sdk"} (a server
/// inside the stream-json client); "scope" as above. Unknown
/// types ("sse": the deprecated HTTP+SSE transport, "ws") and wrong field types are errors
/// that name the server and the field. A name must be non-empty, hold no "__" and be made of
/// letters, digits, '_' and '-'.
expected<mcp_server_config> parse_mcp_server(const std::string& name, const nlohmann::json& entry,
                                             const std::string& source);

/// Expands ${VAR} and ${VAR:-default} in a configuration string as Claude Code does for
/// .mcp.json (command, args, env values, url, header values), through `lookup`; an unset
/// variable with no default is an error naming it.
expected<std::string> expand_mcp_variables(
  const std::string& text, const std::function<std::optional<std::string>(const std::string&)>& lookup);

/// {"jsonrpc": "2.0", "id": id, "method": method, "params": params} (params left out when null).
nlohmann::json mcp_request(int64_t id, const std::string& method,
                           nlohmann::json params = nullptr);
/// {"jsonrpc": "2.0", "method": method, "params": params} (params left out when null).
nlohmann::json mcp_notification(const std::string& method, nlohmann::json params = nullptr);
/// The answer to a request of the server's: its result, or (error) a JSON-RPC error.
nlohmann::json mcp_result(const nlohmann::json& id, nlohmann::json result);
nlohmann::json mcp_error(const nlohmann::json& id, int code, const std::string& message);

/// initialize's params: the newest protocol version, no client capabilities troupe does not
/// implement, clientInfo {"name": "troupe", "version": version}.
nlohmann::json mcp_initialize_params(const std::string& version);

/// What the server answered initialize with, checked: the protocol version (one of
/// mcp_protocol_versions, else an error naming it and the ones troupe speaks), serverInfo,
/// whether it says its tool list can change.
struct mcp_server_info {
  std::string protocol_version;
  std::string name;
  std::string version;
  bool tools = false;
  bool tools_list_changed = false;
  /// Its "instructions", if any.
  std::string instructions;
};
expected<mcp_server_info> read_initialize_result(const nlohmann::json& result);

/// One page of tools/list: the tools (an entry without a string name is skipped, a missing
/// inputSchema is {"type": "object"}) and nextCursor (empty: the last page).
struct mcp_tools_page {
  std::vector<mcp_tool> tools;
  std::string next_cursor;
};
expected<mcp_tools_page> read_tools_page(const nlohmann::json& result);

/// One message read from a server, classified.
struct mcp_incoming {
  enum class kind : uint8_t {
    response,     ///< the answer to a request of troupe's: `id`, `result`
    error,        ///< an error answer: `id` (may be null), `error_code`, `error_message`
    request,      ///< the server asks something (ping, roots/list, sampling): `id`, `method`, `params`
    notification, ///< `method`, `params`
    invalid,      ///< not JSON-RPC 2.0 (or not JSON): `error_message` says why
  };
  kind what = kind::invalid;
  nlohmann::json id;
  std::string method;
  nlohmann::json params;
  nlohmann::json result;
  int64_t error_code = 0;
  std::string error_message;
};

/// Classifies one line (stdio) or one SSE event's data (http), parsed with the bounded
/// parser; a batch (a JSON array) yields each element, in order.
std::vector<mcp_incoming> read_mcp_message(std::string_view text);

/// Renders a tools/call result into what the model sees. Content blocks in order: text as it
/// is; an image or audio block through `save_blob` (mime type, base64 data) -> a line naming
/// its type, size and where it was saved ("[image image/png, 95 bytes: saved to PATH]"; when
/// `save_blob` returns empty, "[image image/png, 95 bytes: not saved]"); a resource_link as
/// "[resource NAME: URI (mimeType)]" with its description; an embedded resource's text (its
/// blob like an image). structuredContent is appended as JSON when no block is text (a text
/// block is what the model reads: servers give their structured content as text too). isError makes it an error result. A result that is not an object, or has
/// no content array and no structuredContent, is an error result saying so.
tool_result render_mcp_call_result(
  const nlohmann::json& result,
  const std::function<std::string(const std::string& mime, const std::string& base64)>& save_blob);

/// A progress notification's params as one line: "PROGRESS/TOTAL: MESSAGE" (what is there).
std::string describe_mcp_progress(const nlohmann::json& params);

/// A tool_spec for one of a server's tools: named mcp__<server>__<tool>, its description and
/// input schema as the server gave them, never read-only (a server's hints are not trusted for
/// permissions), no markdown block (called natively only).
tool_spec mcp_tool_spec(const std::string& server, const mcp_tool& tool);

} // namespace troupe
