#pragma once
// In-process hook points of the loop. Hooks run inside the session actor, in the order added.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <caf/meta/type_name.hpp>
#include <nlohmann/json.hpp>

#include "protocol/json_inspect.hpp"

#include "protocol/hook_event.hpp"
#include "protocol/loop_state.hpp"
#include "protocol/message.hpp"

namespace troupe {

/// The fixed points of the loop at which hooks fire (see DESIGN.md "The loop").
enum class hook_point : uint8_t {
  session_start,   ///< once, after set-up and before the first input
  turn_pre,        ///< once per real turn, after the input is logged (not for slash commands)
  step_pre,        ///< before every step
  generation_post, ///< after each model reply is logged, before its tools run
  turn_post,       ///< once per turn, after its last step
  loop_continue,   ///< after turn_post; returned messages are queued as the next inputs
  pre_compact,     ///< before a compaction; returned messages' text is added to its instructions
  post_compact,    ///< after the boundary is logged; returned messages follow it in the context
  session_end,     ///< once, after the terminal state is known
};

/// Returns the dot-name of a hook point ("session.start", "turn.pre", …).
const char* to_string(hook_point p);

/// What a hook sees: read-only views into the session's state at the moment it fires.
struct hook_context {
  hook_point point;
  const std::string& session_id;
  const loop_state& state;
  const std::vector<message_ptr>& messages;
};

/// A hook; the messages it returns are queued as inputs (origin "hook").
using hook_fn = std::function<std::vector<message>(const hook_context&)>;

/// The hooks of one session, in firing order per point.
using hook_list = std::vector<std::pair<hook_point, hook_fn>>;

// External hooks: commands from the settings files, in Claude Code's layout, run at the same
// points (and around each tool call) with one JSON object on stdin. The events are
// protocol/hook_event.hpp.

/// One command of a settings file's "hooks".
struct hook_command {
  hook_event event = hook_event::session_start;
  /// For PreToolUse and PostToolUse: a tool name or a regular expression matched against the
  /// whole name (troupe's or Claude Code's: "shell" or "Bash"); empty or "*": every tool.
  std::string matcher;
  /// Run by bash -c in the workspace.
  std::string command;
  /// Not a command: a hook the stream-json client registered, called by this id.
  std::string callback_id;
  std::chrono::milliseconds timeout{60000};
};

/// What a caller asks the hook runner: an event, its tool (tool events) and its data.
struct hook_request {
  hook_event event = hook_event::session_start;
  std::string tool;
  /// The event's fields; the runner adds session_id, transcript_path, cwd and the event name.
  nlohmann::json input = nlohmann::json::object();
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, hook_request& x) {
  return f(caf::meta::type_name("hook_request"), x.event, x.tool, x.input);
}

/// What PreToolUse commands decided about a call's permission, in Claude Code's terms; the
/// strongest of the commands' answers counts: deny, then ask, then allow.
enum class hook_permission : uint8_t {
  none,  ///< no decision: the permission check decides alone
  allow, ///< "allow" (or the legacy "approve"): no question is asked; rules still hold
  ask,   ///< "ask": asked as if no rule allowed the call (headless: refused)
  deny,  ///< "deny", "decision": "block" or exit code 2: the call is refused
};

/// What the commands of one event decided together.
struct hook_outcome {
  /// A command blocked: a "decision": "block" on stdout, or exit code 2 (its stderr the reason).
  bool blocked = false;
  std::string reason;
  /// "additionalContext" of every command (plain stdout for SessionStart, UserPromptSubmit).
  std::string additional_context;
  /// "messages" of every command, in order.
  std::vector<std::string> messages;
  /// How many commands ran.
  int32_t ran = 0;
  /// PreToolUse: the permission decision (a block is `deny`), and the reason given with it.
  hook_permission permission = hook_permission::none;
  std::string permission_reason;
  /// PreToolUse: the call's input as a command rewrote it ("updatedInput", in Claude Code's
  /// field names); null when none did. The last command's in settings order wins.
  nlohmann::json updated_input;
  /// A command answered "continue": false: the session stops after this event, with
  /// `stop_reason` ("stopReason" of every such command).
  bool stop = false;
  std::string stop_reason;
  /// "systemMessage" of every command: shown to the user, never to the model.
  std::vector<std::string> system_messages;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, hook_outcome& x) {
  return f(caf::meta::type_name("hook_outcome"), x.blocked, x.reason, x.additional_context,
           x.messages, x.ran, x.permission, x.permission_reason, x.updated_input, x.stop,
           x.stop_reason, x.system_messages);
}

/// How one hook command ended (from the thread that ran it to the runner).
struct hook_process_result {
  int32_t exit_code = 0;
  std::string out;
  std::string err;
  bool timed_out = false;
  int64_t duration_ms = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, hook_process_result& x) {
  return f(caf::meta::type_name("hook_process_result"), x.exit_code, x.out, x.err, x.timed_out,
           x.duration_ms);
}

} // namespace troupe
