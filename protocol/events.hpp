#pragma once
// Everything a session publishes to its subscribers (CLI renderer, parent, fleet dispatcher).

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>
#include <nlohmann/json_fwd.hpp>

#include "protocol/hook_event.hpp"
#include "protocol/loop_state.hpp"
#include "protocol/message.hpp"
#include "protocol/model.hpp"
#include "protocol/step.hpp"
#include "protocol/supervisor.hpp"

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
  /// The instruction files (CLAUDE.md, AGENTS.md, …) read into the system prompt, in order.
  std::vector<std::string> memory_files{};
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_started_event& x) {
  return f(caf::meta::type_name("session_started_event"), x.session_id, x.cwd, x.model, x.tools,
           x.transcript_path, x.loaded_messages, x.memory_files);
}

/// A message was appended to the conversation log (and is already on disk).
struct message_event {
  std::string session_id;
  message msg;
  /// A subagent's message: the id of the `task` call that launched it (empty: a session's
  /// own).
  std::string parent_tool_use_id{};
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, message_event& x) {
  return f(caf::meta::type_name("message_event"), x.session_id, x.msg, x.parent_tool_use_id);
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
  /// This run's usage, and its cost (subagents' included).
  token_usage usage;
  double cost_usd = 0;
  /// The session's usage and cost over all its runs, its subagents' included (the cost is
  /// unknown when a model's price is not in the table).
  token_usage total_usage;
  double total_cost_usd = 0;
  bool cost_known = true;
  int64_t duration_ms = 0;
  /// Every call the permission check refused during the session, in order.
  std::vector<permission_denial> permission_denials;
  /// The subagents still running when it ended: stopped (state "stopped"), or left to finish
  /// (--let-agents-finish; state "running").
  std::vector<agent_descriptor> agents_left;
  /// Time spent waiting for the model, in this run (or this turn, in a turn's summary).
  int64_t api_duration_ms = 0;
  /// The model it ended with.
  std::string model;
  /// A turn_ended_event already reported the turn this end cut short (or no turn was open):
  /// a front end that prints one result per turn prints none for the end.
  bool turn_reported = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_ended_event& x) {
  return f(caf::meta::type_name("session_ended_event"), x.session_id, x.reason, x.error_message,
           x.error_kind, x.result_text, x.state, x.usage, x.cost_usd, x.total_usage, x.total_cost_usd,
           x.cost_known, x.duration_ms, x.permission_denials, x.agents_left, x.api_duration_ms,
           x.model, x.turn_reported);
}

/// A turn ended (sessions whose config asks for it: a stream-json client reads one result per
/// turn). The summary says what the turn did as a terminal event says what a run did: its
/// reason, answer, usage, cost, duration and refusals are the turn's; `total_*` are the
/// session's so far.
struct turn_ended_event {
  session_ended_event summary;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, turn_ended_event& x) {
  return f(caf::meta::type_name("turn_ended_event"), x.summary);
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

/// Where a session stands, for a front end: published when it starts waiting for input (busy
/// false), when a turn starts (busy true), and when its model or name changes.
struct session_status_event {
  std::string session_id;
  bool busy = false;
  std::string model;
  std::string name;
  int64_t turn_count = 0;
  /// The session's usage over all its runs; the cost is its whole (subagents included).
  token_usage usage;
  double cost_usd = 0;
  bool cost_known = true;
  /// The projected size of the next request, and the model's window.
  int64_t context_tokens = 0;
  int64_t context_window = 0;
  /// Background subagents still running (a session waiting for them is not idle).
  int32_t background = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_status_event& x) {
  return f(caf::meta::type_name("session_status_event"), x.session_id, x.busy, x.model, x.name,
           x.turn_count, x.usage, x.cost_usd, x.cost_known, x.context_tokens, x.context_window,
           x.background);
}

/// An external hook command started (`finished` false) or ended.
struct hook_run_event {
  std::string session_id;
  /// Unique per run of one command; the started and the finished event share it.
  std::string hook_id;
  /// The event whose commands run (spelled as the settings spell it in JSON).
  hook_event event = hook_event::session_start;
  std::string command;
  bool finished = false;
  int32_t exit_code = 0;
  /// "success", "blocked" (a decision or exit 2), "error" (another exit code, not JSON) or
  /// "timeout".
  std::string outcome;
  std::string stdout_text;
  std::string stderr_text;
  int64_t duration_ms = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, hook_run_event& x) {
  return f(caf::meta::type_name("hook_run_event"), x.session_id, x.hook_id, x.event, x.command,
           x.finished, x.exit_code, x.outcome, x.stdout_text, x.stderr_text, x.duration_ms);
}

void to_json(nlohmann::json& j, const session_status_event& x);
void from_json(const nlohmann::json& j, session_status_event& x);
void to_json(nlohmann::json& j, const hook_run_event& x);
void from_json(const nlohmann::json& j, hook_run_event& x);
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
