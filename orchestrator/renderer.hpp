#pragma once
// The CLI's subscriber: prints a session's events as text or stream-json.

#include <cstdio>
#include <functional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "orchestrator/output_format.hpp"
#include "protocol/interfaces.hpp"

namespace caf {
class actor_system;
}

namespace troupe {

/// How the CLI shows a session.
struct render_options {
  output_format format = output_format::text;
  /// stream-json: add `stream_event` lines with the text deltas.
  bool include_partial_messages = false;
  /// Text: ANSI colours (see colour_wanted).
  bool colour = false;
  /// Text: show the user's own prompts (a chat has them on the screen already).
  bool echo_prompts = true;
  /// Text as `claude -p` prints it: the answer alone on stdout (an error on stderr), for
  /// `x=$(troupe -p …)`.
  bool answer_only = false;
  /// stream-json for a stream-json client: one result line per turn (turn_ended_event), none
  /// for the session's end unless it ended outside a turn with an error.
  bool report_turns = false;
  /// stream-json: tool names and inputs in Claude Code's spelling (the Agent SDK's users test
  /// `tool_name === "Bash"`).
  bool claude_names = false;
  /// stream-json: fields added to the system/init line (permission mode, version, …);
  /// "mcp_tools" is added to its "tools".
  nlohmann::json init_extras = nlohmann::json::object();
};

/// Where rendered output goes, called from the renderer's thread.
struct render_sink {
  /// Writes text; false once the reader has gone (a broken pipe).
  std::function<bool(std::string_view)> write;
  /// The session's status changed (idle, busy, model, name, usage); may be empty.
  std::function<void(const session_status_event&)> on_status;
  /// The terminal event arrived (it has been written).
  std::function<void(const session_ended_event&)> on_end;
  /// A turn's result was written (report_turns); may be empty.
  std::function<void(const session_ended_event&)> on_turn;
};

/// A sink that writes to a stdio stream, flushing after every event.
render_sink stream_sink(std::FILE* out, std::function<void(const session_ended_event&)> on_end);

/// Spawns a renderer of `session`'s events (subscribe it to the session). After the
/// session_ended event it calls `on_end` and quits; a session that goes down without that event
/// ends the rendering as an error. When a write fails (a broken pipe) the session is
/// interrupted: nobody is listening.
event_sink_actor spawn_renderer(caf::actor_system& sys, render_options options, render_sink sink,
                                session_actor session);

} // namespace troupe
