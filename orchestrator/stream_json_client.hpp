#pragma once
// A stream-json client's front end (`--input-format stream-json`, as the Claude Agent SDK
// drives Claude Code): stdin is read as it arrives, one JSON object per line — user messages
// start or queue turns, control requests are answered — and the requests troupe puts to the
// client (can_use_tool, hook_callback) go out on stdout beside the session's own lines.

#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/agent_type.hpp"
#include "protocol/expected.hpp"
#include "protocol/hooks.hpp"
#include "protocol/interfaces.hpp"
#include "tools/mcp_wire.hpp"

namespace caf {
class actor_system;
}

namespace troupe {

/// Whole lines onto one stream from several threads (the renderer's, the client's).
class line_writer {
public:
  explicit line_writer(std::FILE* out) : out_(out) {}
  /// Writes `line` and a newline, flushed; false once the reader has gone.
  bool write(std::string_view line);

private:
  std::mutex mutex_;
  std::FILE* out_;
  bool closed_ = false;
};

/// Reads stdin line by line as it arrives (never to its end first). A line longer than the cap
/// is skipped with an error, up to its newline.
class line_reader {
public:
  explicit line_reader(int fd, size_t max_line = size_t{64} << 20) : fd_(fd), max_line_(max_line) {}
  /// The next line without its newline; nullopt at the end of input. `error` says why a line
  /// was skipped (too long), when one was.
  std::optional<std::string> next(std::string* error = nullptr);

private:
  int fd_;
  size_t max_line_;
  std::string buffer_;
  bool eof_ = false;
};

/// One line of a stream-json client, sorted.
struct client_line {
  enum class kind {
    user,             ///< a user message: `text` is its text
    control_request,  ///< `request_id`, `subtype`, `body` (the request object)
    control_response, ///< `request_id`, `body` (the response object), `error` on an error
    control_cancel,   ///< `request_id`
    ignored,          ///< keep_alive and other lines that need nothing
    invalid,          ///< `error` says what is wrong
  };
  kind what = kind::invalid;
  std::string text;
  std::string request_id;
  std::string subtype;
  nlohmann::json body;
  std::string error;
};

/// Sorts one line of stdin. A user message's content may be a string or content blocks; text
/// blocks are joined, other blocks are an error (troupe's messages are text).
client_line parse_client_line(std::string_view line);

/// What an `initialize` request asks of the run before it starts.
struct client_initialize {
  std::string request_id;
  /// A system prompt in place of troupe's own instructions (empty: troupe's), and text after it.
  std::string system_prompt;
  std::string append_system_prompt;
  /// Hook callbacks: one hook_command per callback id, for the hook runner.
  std::vector<hook_command> hooks;
  /// Subagent types (the SDK's `agents`), over the workspace's of the same name.
  agent_types agents;
  /// The MCP servers that live in the client (`sdkMcpServers`: the SDK's createSdkMcpServer):
  /// their messages go through the control channel (mcp_message).
  std::vector<std::string> sdk_mcp_servers;
  /// The other MCP servers it names (`mcpServers`, the SDK's default way to send them), checked,
  /// over those of the command line and settings of the same name.
  std::vector<mcp_server_config> mcp_servers;
  bool mcp_servers_sent = false;
  /// Hook events troupe has none of: their callbacks are never called (told on stderr).
  std::vector<std::string> skipped_events;
};

/// Reads an initialize request's body (`request`); a malformed one is an error.
expected<client_initialize> read_initialize(const nlohmann::json& request,
                                            const std::string& request_id);

/// What the front end answers and says about the session it drives.
struct stream_client_setup {
  std::shared_ptr<line_writer> out;
  /// The initialize request read before the launch, answered once the session exists.
  std::optional<client_initialize> initialize;
  /// The answer's static part: commands, models, output style.
  nlohmann::json initialize_answer = nlohmann::json::object();
};

/// Spawns the front end. Give it its session with (client_atom, session) once launched; then
/// stdin's lines as (client_atom, line), and its end as (client_atom). Lines that come before
/// the session wait for it, but the answers to troupe's own requests (control_response), which
/// the MCP servers' start-up needs before the session starts.
stream_client_actor spawn_stream_client(caf::actor_system& sys, stream_client_setup setup);

/// Starts the thread that reads the rest of stdin into the client: each line, then its end.
void read_client_lines(std::shared_ptr<line_reader> reader, stream_client_actor client);

struct run_settings;

/// open_client's error when a signal came before the client's first line (exit 130).
inline constexpr const char* client_interrupted = "interrupted before the client's first line";

/// A client run's front end before its session exists: the actor, stdout's writer, stdin's
/// reader, and the first line when it was not an initialize request.
struct client_run {
  stream_client_actor actor;
  std::shared_ptr<line_writer> writer;
  std::shared_ptr<line_reader> reader;
  std::optional<std::string> first_line;
  /// The MCP servers that live in the client (its initialize's sdkMcpServers).
  std::vector<std::string> sdk_mcp_servers;
  /// The other MCP servers its initialize named (mcpServers).
  std::vector<mcp_server_config> mcp_servers;
};

/// Reads stdin's first line — an initialize request adds its hooks, prompts and answer to the
/// run — and spawns the front end; the run's render options are set for the client. A
/// malformed initialize request is an error.
expected<client_run> open_client(caf::actor_system& sys, run_settings& settings,
                                 std::FILE* out);

/// Starts reading the rest of stdin into the front end (the first line, when it was no
/// initialize request, before it): right after the launch, so that the client's own MCP servers
/// can start while the session waits for them.
void read_client_input(client_run& client);

/// Gives the front end its session: the lines that came before it are taken now.
void start_client(client_run& client, session_actor session, const std::string& session_id);

/// A control_response line.
nlohmann::json control_success(const std::string& request_id,
                               nlohmann::json response = nlohmann::json::object());
nlohmann::json control_failure(const std::string& request_id, const std::string& error);

/// Claude Code's spelling of a permission mode ("acceptEdits") as troupe's ("accept-edits");
/// troupe's own pass through; nullopt for neither.
std::optional<std::string> troupe_mode_name(const std::string& mode);


} // namespace troupe
