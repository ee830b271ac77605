#pragma once
// In-process hook points of the loop. Hooks run inside the session actor, in the order added.

#include <functional>
#include <string>
#include <utility>
#include <vector>

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

} // namespace troupe
