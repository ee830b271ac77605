#pragma once
// Private to the session's sources: its state and the loop functions its handlers call.

#include <chrono>
#include <deque>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/session.hpp"
#include "actors/transcript.hpp"
#include "context/context_window.hpp"

namespace troupe {

enum class session_phase {
  created,  ///< spawned, waiting for start_atom
  idle,     ///< interactive and waiting for input
  stepping, ///< a step is in flight
  compacting, ///< a compaction summary is being written
  ended,    ///< terminal state reached
};

struct session_state {
  session_config config;
  std::vector<message_ptr> log;
  std::deque<message> queue;
  loop_state state;
  transcript_writer transcript;
  loop_state_file state_file;
  std::vector<event_sink_actor> subscribers;
  step_actor step;
  model_client_actor model;
  tool_executor_actor executor;
  /// What the model is sent: the log since the last compact boundary, with token counts.
  context_window window;
  /// The raw token estimate of the request in flight, to calibrate against the reported usage.
  int64_t sent_estimate = 0;
  session_phase phase = session_phase::created;
  bool interrupt_requested = false;
  token_usage usage;
  std::string last_assistant_text;
  /// Every call the permission check refused, for the session_ended event.
  std::vector<permission_denial> permission_denials;
  /// The last step that ran tools had a call refused: a turn that then ends without another
  /// tool round made no progress because of permissions.
  bool last_tool_step_denied = false;
  std::chrono::steady_clock::time_point started_at = std::chrono::steady_clock::now();
};

using session_ptr = session_actor::stateful_pointer<session_state>;

/// Sets up and enters the turn loop (session.start hooks, crash recovery, first input).
void begin_session(session_ptr self);

/// Queues an input; starts a turn at once when the session is idle.
void accept_input(session_ptr self, message input);

/// Logs the step's reply (before its tools run) and fires generation.post. Returns whether
/// the step may run the reply's tools.
bool accept_reply(session_ptr self, message reply);

/// Reaches a terminal state: state saved, session.end hooks, the ended event, peers stopped.
void end_session(session_ptr self, terminal_reason reason, std::string error = {},
                 model_error_kind kind = model_error_kind::none);

/// Forwards an interrupt to the step (or compaction) in flight.
void request_interrupt(session_ptr self);

} // namespace troupe
