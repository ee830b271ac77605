#pragma once
// What the session hands a step, and what the step hands back.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

#include "protocol/hook_event.hpp"
#include "protocol/json_inspect.hpp"
#include "protocol/message.hpp"
#include "protocol/model.hpp"
#include "protocol/permission.hpp"

namespace troupe {

/// One step to carry out: the context to send and the step's number in its turn.
struct step_request {
  context_snapshot context;
  int32_t step_number = 0;
  /// The permission mode the session's client set (tools/permissions.hpp's permission_mode as
  /// a number); -1: the step's own.
  int32_t permission_mode = -1;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_request& x) {
  return f(caf::meta::type_name("step_request"), x.context, x.step_number, x.permission_mode);
}

/// How a step ended.
enum class step_status : uint8_t {
  replied,     ///< the model replied; tool_messages answer every call it made
  interrupted, ///< cancelled; every call already issued has an (interrupted) result
  failed,      ///< the model call failed; see error fields
};

/// A call the permission check refused (or the user declined).
struct permission_denial {
  std::string tool_name;
  std::string tool_call_id;
  nlohmann::json tool_input;
  std::string reason;
  denial_cause cause = denial_cause::refused;

  friend bool operator==(const permission_denial& a, const permission_denial& b) {
    return a.tool_name == b.tool_name && a.tool_call_id == b.tool_call_id &&
           a.tool_input == b.tool_input && a.reason == b.reason && a.cause == b.cause;
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, permission_denial& x) {
  return f(caf::meta::type_name("permission_denial"), x.tool_name, x.tool_call_id, x.tool_input,
           x.reason, x.cause);
}

void to_json(nlohmann::json& j, const permission_denial& x);
void from_json(const nlohmann::json& j, permission_denial& x);

/// The result of one step: the reply, its tool results in call order, and why it ended.
struct step_outcome {
  step_status status = step_status::replied;
  message reply;
  std::vector<message> tool_messages;
  token_usage usage;
  model_error_kind error = model_error_kind::none;
  std::string error_message;
  /// Calls refused by the permission check, in call order.
  std::vector<permission_denial> denials;
  /// The user declined a call when asked: control goes back to them (status interrupted).
  bool declined = false;
  /// Continuation requests made because the reply hit the output limit (its pieces are joined).
  int32_t continuations = 0;
  /// The tool whose call was still cut at the output limit when the continuations ran out; the
  /// call was dropped, not run.
  std::string unfinished_call;
  /// Time spent waiting for the model's replies.
  int64_t api_ms = 0;
  /// A PreToolUse or PostToolUse hook answered "continue": false: the calls after it were not
  /// run, and the session stops (`stop_reason` its "stopReason").
  bool hook_stopped = false;
  hook_event stop_event = hook_event::pre_tool_use;
  std::string stop_reason;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_outcome& x) {
  return f(caf::meta::type_name("step_outcome"), x.status, x.reply, x.tool_messages, x.usage,
           x.error, x.error_message, x.denials, x.declined, x.continuations, x.unfinished_call,
           x.api_ms, x.hook_stopped, x.stop_event, x.stop_reason);
}

} // namespace troupe
