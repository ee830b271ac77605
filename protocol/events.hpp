#pragma once
// Everything a session publishes to its subscribers (CLI renderer, parent, fleet dispatcher).

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>
#include <nlohmann/json_fwd.hpp>

#include "protocol/loop_state.hpp"
#include "protocol/message.hpp"
#include "protocol/model.hpp"
#include "protocol/step.hpp"

namespace troupe {

/// The session is set up and about to take its first input.
struct session_started_event {
  std::string session_id;
  std::string cwd;
  std::string model;
  std::vector<std::string> tools;
  std::string transcript_path;
  /// Messages loaded from an existing transcript (0 for a new session).
  int64_t loaded_messages = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_started_event& x) {
  return f(caf::meta::type_name("session_started_event"), x.session_id, x.cwd, x.model, x.tools,
           x.transcript_path, x.loaded_messages);
}

/// A message was appended to the conversation log (and is already on disk).
struct message_event {
  std::string session_id;
  message msg;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, message_event& x) {
  return f(caf::meta::type_name("message_event"), x.session_id, x.msg);
}

/// Something the user should know that is not part of the conversation.
struct notice_event {
  std::string session_id;
  /// Stable kind: "warning", "queue_overflow", "unknown_command", "hook_error", …
  std::string kind;
  std::string text;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, notice_event& x) {
  return f(caf::meta::type_name("notice_event"), x.session_id, x.kind, x.text);
}

/// The session reached a terminal state; no further events follow.
struct session_ended_event {
  std::string session_id;
  terminal_reason reason = terminal_reason::completed;
  std::string error_message;
  /// For an ended-by-error run caused by the model: what kind of failure ("none" otherwise).
  model_error_kind error_kind = model_error_kind::none;
  /// The last assistant text, the run's answer.
  std::string result_text;
  loop_state state;
  token_usage usage;
  int64_t duration_ms = 0;
  /// Every call the permission check refused during the session, in order.
  std::vector<permission_denial> permission_denials;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_ended_event& x) {
  return f(caf::meta::type_name("session_ended_event"), x.session_id, x.reason, x.error_message,
           x.error_kind, x.result_text, x.state, x.usage, x.duration_ms, x.permission_denials);
}

/// What a generation in flight is doing: text arriving, or a retry being waited for.
enum class progress_kind : uint8_t {
  text_delta, ///< `text` arrived from the model
  api_retry,  ///< the request failed and is retried after `delay_ms`
};

/// Live progress of a generation (from the model client, through the step and the session).
struct generation_progress {
  std::string session_id;
  progress_kind kind = progress_kind::text_delta;
  std::string text;
  int32_t attempt = 0;
  int32_t max_retries = 0;
  int64_t delay_ms = 0;
  int32_t status = 0;
  std::string error;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, generation_progress& x) {
  return f(caf::meta::type_name("generation_progress"), x.session_id, x.kind, x.text, x.attempt,
           x.max_retries, x.delay_ms, x.status, x.error);
}

void to_json(nlohmann::json& j, const generation_progress& x);
void from_json(const nlohmann::json& j, generation_progress& x);
void to_json(nlohmann::json& j, const session_started_event& x);
void from_json(const nlohmann::json& j, session_started_event& x);
void to_json(nlohmann::json& j, const message_event& x);
void from_json(const nlohmann::json& j, message_event& x);
void to_json(nlohmann::json& j, const notice_event& x);
void from_json(const nlohmann::json& j, notice_event& x);
void to_json(nlohmann::json& j, const session_ended_event& x);
void from_json(const nlohmann::json& j, session_ended_event& x);

} // namespace troupe
