#pragma once
// Private to the step actor's sources: its state and the functions they share. step.cpp
// generates (the model call, continuations after an output-limit cut, the reply handed to the
// session, interrupts); step_tools.cpp runs the tool round (permissions, hooks around calls,
// read-only batches, results in call order).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/step.hpp"

namespace troupe {

enum class step_phase { idle, generating, running_tools, compacting };

struct step_state {
  step_config config;
  session_actor session;
  model_client_actor model;
  tool_executor_actor executor;
  shared_value<std::vector<tool_descriptor>> tools;
  /// The registry the step was configured with, and the latest report of each MCP server the
  /// agent uses: the tools offered are both (config.registry), made again at the start of a
  /// step after a report changed them, never while a step runs (a spec in use stays put).
  std::shared_ptr<const tool_registry> base_registry;
  std::map<std::string, mcp_server_report> mcp_reports;
  bool mcp_changed = false;
  /// Servers still starting when the step began (an agent's own, one started again): the
  /// model request waits for them, as long as their start-up may take at most. The serial
  /// tells a late answer (after an interrupt) from the current wait.
  size_t mcp_waiting = 0;
  uint64_t mcp_wait_serial = 0;

  step_phase phase = step_phase::idle;
  bool interrupted = false;
  /// The executor was told to start its shell, right after the step's first model request.
  bool shell_started = false;
  caf::typed_response_promise<step_outcome> promise;
  step_outcome outcome;
  /// The generation request of the step, kept for continuations after an output-limit cut.
  model_request request;
  /// The pieces of a reply cut at the output limit, joined so far.
  std::optional<message> partial;
  /// The compaction summary in flight.
  caf::typed_response_promise<model_reply> compaction;
  size_t next_call = 0;
  /// Set while the person at the terminal is asked about a call; the serial tells a late
  /// answer (after an interrupt moved on) from the current one.
  bool asking = false;
  uint64_t ask_serial = 0;
  /// The permission policy, with the session's "always" answers added to it.
  std::optional<permission_policy> permissions;
  /// Results of the batch of calls in flight, by position from next_call.
  std::vector<std::optional<tool_result>> batch;
  size_t batch_pending = 0;
  /// Set while external hooks run around a call (PreToolUse before it, PostToolUse after the
  /// batch); the serial tells a late answer (after an interrupt moved on) from the current one.
  bool hooking = false;
  uint64_t hook_serial = 0;
  /// What PreToolUse hooks added about a call, by call id: appended to its result.
  std::map<std::string, std::string> call_notes;
  /// Inputs PreToolUse hooks rewrote ("updatedInput"), by call id: what ran, in the result's
  /// meta (the reply on disk keeps what the model asked for).
  std::map<std::string, nlohmann::json> updated_inputs;
  /// A hook of `hook_stop_event` answered "continue": false, with this stopReason: no further
  /// call runs.
  std::optional<std::string> hook_stop;
  hook_event hook_stop_event = hook_event::pre_tool_use;
};

using step_ptr = step_actor::stateful_pointer<step_state>;

/// Delivers the step's outcome with `status`; the step is idle again.
void finish_step(step_ptr self, step_status status);

// The tool round (step_tools.cpp).

/// Runs the next call, or the next run of consecutive read-only calls, after its permission
/// check; with every call answered (or the step interrupted) the step finishes.
void run_next_call(step_ptr self);

/// Puts the batch's results into the outcome, in call order, with what hooks said about them,
/// and goes on with the next call.
void log_batch(step_ptr self);

} // namespace troupe
