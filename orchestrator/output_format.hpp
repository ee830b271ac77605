#pragma once
// How the CLI renders a session's events: readable text, or Claude Code-style json (the result
// line alone) and stream-json.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "protocol/events.hpp"

namespace troupe {

enum class output_format {
  text,        ///< readable text as it happens
  json,        ///< one JSON object at the end: stream-json's result line
  stream_json, ///< one JSON object per event and line
};

/// ANSI colours for the text format; all empty when colour is off.
struct text_style {
  std::string bold, dim, red, green, yellow, cyan, magenta, reset;

  /// Colours when `on`, else none.
  static text_style make(bool on);
};

/// Text from a model, a tool or a file made safe to show on a terminal: control characters
/// (ESC, BEL, backspace, C1 codes, …) become visible caret forms (`^[`), so no escape sequence
/// in them can retitle, recolour or clear the terminal; CR LF becomes LF and a lone CR a line
/// break. Tabs and line breaks stay; everything else is passed as is.
std::string printable(std::string_view text);

/// True when text written to `fd` may carry colour: a terminal, NO_COLOR unset, TERM not dumb.
bool colour_wanted(int fd);

/// Returns the stream-json line for an event ({"type":"system","subtype":"init",…}, …),
/// or null for events stream-json does not show.
nlohmann::json to_stream_json(const session_started_event& e);
nlohmann::json to_stream_json(const message_event& e);
nlohmann::json to_stream_json(const notice_event& e);
nlohmann::json to_stream_json(const session_ended_event& e);

/// A stream-json line with tool names and inputs in Claude Code's spelling: the init line's
/// tools, assistant tool_use blocks, result permission_denials.
void use_claude_names(nlohmann::json& line);
/// `{"type":"system","subtype":"hook_started"|"hook_response",…}`.
nlohmann::json to_stream_json(const hook_run_event& e);
/// Text deltas become `stream_event` lines only when partial messages were asked for;
/// retries are always `{"type":"system","subtype":"api_retry",…}`.
nlohmann::json to_stream_json(const generation_progress& e, bool include_partial_messages);

/// Returns the readable text for an event (may be empty), coloured by `style`.
std::string to_text(const session_started_event& e, const text_style& style = {});
/// `streamed` says the reply's text was already printed as it arrived.
std::string to_text(const message_event& e, bool streamed = false, const text_style& style = {});
std::string to_text(const generation_progress& e, const text_style& style = {});
std::string to_text(const notice_event& e, const text_style& style = {});
std::string to_text(const session_ended_event& e, const text_style& style = {});
/// Only hooks that blocked, failed or timed out are shown.
std::string to_text(const hook_run_event& e, const text_style& style = {});

/// Returns the stream-json `result` subtype for a terminal reason.
const char* result_subtype(terminal_reason r);

} // namespace troupe
