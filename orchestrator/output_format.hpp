#pragma once
// How the CLI renders a session's events: readable text, or Claude Code-style stream-json.

#include <string>

#include <nlohmann/json.hpp>

#include "protocol/events.hpp"

namespace troupe {

enum class output_format { text, stream_json };

/// Returns the stream-json line for an event ({"type":"system","subtype":"init",…}, …),
/// or null for events stream-json does not show.
nlohmann::json to_stream_json(const session_started_event& e);
nlohmann::json to_stream_json(const message_event& e);
nlohmann::json to_stream_json(const notice_event& e);
nlohmann::json to_stream_json(const session_ended_event& e);
/// Text deltas become `stream_event` lines only when partial messages were asked for;
/// retries are always `{"type":"system","subtype":"api_retry",…}`.
nlohmann::json to_stream_json(const generation_progress& e, bool include_partial_messages);

/// Returns the readable text for an event (may be empty).
std::string to_text(const session_started_event& e);
/// `streamed` says the reply's text was already printed as it arrived.
std::string to_text(const message_event& e, bool streamed = false);
std::string to_text(const generation_progress& e);
std::string to_text(const notice_event& e);
std::string to_text(const session_ended_event& e);

/// Returns the stream-json `result` subtype for a terminal reason.
const char* result_subtype(terminal_reason r);

} // namespace troupe
