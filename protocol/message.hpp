#pragma once
// The conversation's building blocks: messages, tool calls and tool results.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <caf/meta/type_name.hpp>
#include <nlohmann/json.hpp>

#include "protocol/json_inspect.hpp"

namespace troupe {

/// Who wrote a message.
enum class role : uint8_t { system, user, assistant, tool };

/// Returns the wire name of a role ("system", "user", "assistant", "tool").
const char* to_string(role r);

/// Where a message came from. Each has one spelling in transcripts and events (to_string).
enum class message_origin : uint8_t {
  none,              ///< "" (left out): the model's replies and tool results
  prompt,            ///< "prompt": typed or given on the command line
  parent,            ///< "parent": a subagent's task from the session that launched it
  task_notification, ///< "task-notification": a background task or agent ended, or a poke
  hook,              ///< "hook": a hook's message or additional context
  hook_blocked,      ///< "hook_blocked": a hook refused the prompt or the stop
  interrupt,         ///< "interrupt": the note that the user interrupted the turn
  declined,          ///< "declined": the note that the user declined a tool call
  error,             ///< "error": the note that the turn ended with an error
  max_output,        ///< "max_output": the reply was cut at the output limit
  max_steps,         ///< "max_steps": the turn reached its step limit
  model,             ///< "model": the note that /model switched the model
  namer,             ///< "namer": the request that names a session
  undo,              ///< "undo": the marker that hides the last exchange
  clear,             ///< "clear": the marker that hides everything before it
  compaction,        ///< "compaction": the request for a summary
  compact_boundary,  ///< "compact_boundary": the system entry holding a summary
  compact_summary,   ///< "compact_summary": the summary as the model reads it
  continuation,      ///< "continuation": the request to go on after the output limit
  other,             ///< "other": a spelling this version does not know (a newer transcript)
};

/// Returns the spelling of an origin ("" for none, "task-notification", "hook", …).
const char* to_string(message_origin o);

/// Returns the origin spelled so, or message_origin::other for a spelling not known here: a
/// transcript line from another version still loads.
message_origin origin_from_string(std::string_view spelling);

/// Why a tool call was answered without running, if it was. Each has one spelling in transcripts
/// and stream-json (to_string).
enum class refusal : uint8_t {
  none,       ///< "" (left out): the call ran, or was meant to (its result says how it went)
  permission, ///< "permission": a permission rule, the mode's default, a headless ask, nobody
              ///< answering
  plan_mode,  ///< "plan_mode": plan mode runs read-only calls only
  user,       ///< "user": the user declined it when asked
  hook,       ///< "hook": a PreToolUse hook blocked it
  other,      ///< "other": a spelling this version does not know (a newer transcript)
};

/// Returns the spelling of a refusal ("" for none, "permission", "plan_mode", "user", "hook").
const char* to_string(refusal r);

/// Returns the refusal spelled so, or refusal::other for a spelling not known here.
refusal refusal_from_string(std::string_view spelling);

/// How a tool call was expressed by the model.
enum class call_format : uint8_t {
  native,   ///< the provider's function calling
  markdown, ///< a fenced block such as ```shell
  xml,      ///< a <tool-use> element
};

/// One request of the model to run a tool.
struct tool_call {
  std::string id;
  std::string name;
  nlohmann::json input = nlohmann::json::object();
  call_format format = call_format::native;
  /// Where the permission check found the call's path to lead when it decided (empty: no path,
  /// or no check). Set by the step, never logged: a file tool refuses a path that leads
  /// elsewhere by the time it runs (a link swapped in meanwhile).
  std::string approved_path{};

  friend bool operator==(const tool_call& a, const tool_call& b) {
    return a.id == b.id && a.name == b.name && a.input == b.input && a.format == b.format;
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tool_call& x) {
  return f(caf::meta::type_name("tool_call"), x.id, x.name, x.input, x.format, x.approved_path);
}

/// What running one tool produced; failures are results too (is_error).
struct tool_result {
  std::string output;
  bool is_error = false;
  /// The process exit code for process tools, 0 for others, -1 when killed or never run.
  int32_t exit_code = 0;
  /// True when output was cut to fit the output cap.
  bool truncated = false;
  /// Who refused the call, when it was answered without running (output says why).
  refusal refused = refusal::none;

  friend bool operator==(const tool_result& a, const tool_result& b) {
    return a.output == b.output && a.is_error == b.is_error && a.exit_code == b.exit_code &&
           a.truncated == b.truncated && a.refused == b.refused;
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tool_result& x) {
  return f(caf::meta::type_name("tool_result"), x.output, x.is_error, x.exit_code, x.truncated,
           x.refused);
}

/// One entry of the conversation log. Tool messages carry their result inline.
struct message {
  std::string id;
  troupe::role role = troupe::role::user;
  std::string content;
  /// Calls the assistant asked for (native or parsed from its text), in order.
  std::vector<tool_call> tool_calls;
  /// For role::tool: the call this message answers, and the tool's name.
  std::string tool_call_id;
  std::string tool_name;
  bool is_error = false;
  int32_t exit_code = 0;
  bool truncated = false;
  /// For role::tool: who refused the call, when it never ran (content says why).
  refusal refused = refusal::none;
  message_origin origin = message_origin::none;
  int64_t timestamp_ms = 0;
  /// Structured facts of a system entry (a compact boundary's trigger and token counts);
  /// null for ordinary messages.
  nlohmann::json meta;

  friend bool operator==(const message& a, const message& b) {
    return a.id == b.id && a.role == b.role && a.content == b.content &&
           a.tool_calls == b.tool_calls && a.tool_call_id == b.tool_call_id &&
           a.tool_name == b.tool_name && a.is_error == b.is_error &&
           a.exit_code == b.exit_code && a.truncated == b.truncated && a.refused == b.refused &&
           a.origin == b.origin &&
           a.timestamp_ms == b.timestamp_ms && a.meta == b.meta;
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, message& x) {
  return f(caf::meta::type_name("message"), x.id, x.role, x.content, x.tool_calls,
           x.tool_call_id, x.tool_name, x.is_error, x.exit_code, x.truncated, x.refused, x.origin,
           x.timestamp_ms, x.meta);
}

/// Messages are immutable once logged; actors share them by pointer, never mutate them.
using message_ptr = std::shared_ptr<const message>;

/// An immutable view of the conversation handed from the session to a step.
struct context_snapshot {
  std::vector<message_ptr> messages;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, context_snapshot& x) {
  // Serialised by value: a remote node gets its own copies.
  if constexpr (Inspector::reads_state) {
    std::vector<message> copies;
    copies.reserve(x.messages.size());
    for (auto& m : x.messages)
      copies.push_back(*m);
    return f(caf::meta::type_name("context_snapshot"), copies);
  } else {
    std::vector<message> copies;
    auto result = f(caf::meta::type_name("context_snapshot"), copies);
    x.messages.clear();
    for (auto& m : copies)
      x.messages.push_back(std::make_shared<const message>(std::move(m)));
    return result;
  }
}

/// Builds the tool message that answers `call` with `result`.
message make_tool_message(const tool_call& call, const tool_result& result);

void to_json(nlohmann::json& j, const tool_call& x);
void from_json(const nlohmann::json& j, tool_call& x);
void to_json(nlohmann::json& j, const tool_result& x);
void from_json(const nlohmann::json& j, tool_result& x);
void to_json(nlohmann::json& j, const message& x);
void from_json(const nlohmann::json& j, message& x);

} // namespace troupe
