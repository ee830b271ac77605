#pragma once
// The typed interfaces of troupe's actors. Each message names who sends it and what it causes.

#include <cstdint>

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "protocol/atoms.hpp"
#include "protocol/control.hpp"
#include "protocol/events.hpp"
#include "protocol/hooks.hpp"
#include "protocol/http.hpp"
#include "protocol/mcp.hpp"
#include "protocol/message.hpp"
#include "protocol/model.hpp"
#include "protocol/notification.hpp"
#include "protocol/permission.hpp"
#include "protocol/process.hpp"
#include "protocol/step.hpp"
#include "protocol/supervisor.hpp"

namespace troupe {

/// Receives a session's events: the CLI renderer, a parent session, a fleet dispatcher.
using event_sink_actor = caf::typed_actor<
  // First event of a session.
  caf::reacts_to<session_started_event>,
  // A message was appended to the log (already on disk).
  caf::reacts_to<message_event>,
  // Warnings and other out-of-band information.
  caf::reacts_to<notice_event>,
  // Text arriving from the model, retries (for live rendering).
  caf::reacts_to<generation_progress>,
  // Idle or busy, model, name, usage and cost (for a front end's prompt and status line).
  caf::reacts_to<session_status_event>,
  // An external hook command started or ended.
  caf::reacts_to<hook_run_event>,
  // A turn ended and the session goes on (only when its config asks: report_turns).
  caf::reacts_to<turn_ended_event>,
  // Last event of a session.
  caf::reacts_to<session_ended_event>>;

/// Turns a request into one model reply for one provider; cancellable.
using model_client_actor = caf::typed_actor<
  // Generate one reply. Failures are replies with `error` set, never CAF errors.
  caf::replies_to<generate_atom, model_request>::with<model_reply>,
  // Cancel the generation in flight: it answers at once with error `interrupted`.
  caf::reacts_to<cancel_atom>,
  // Internal: a delayed reply (scripted `delay_ms`) is due.
  caf::reacts_to<due_atom, uint64_t>>;

/// Where an agent reports its end: the supervisor that launched it.
using agent_parent_actor = caf::typed_actor<
  // The agent ended (or, detached, its end is written to the owner's durable queue instead).
  // Answers false when the news can no longer be taken.
  caf::replies_to<notify_atom, task_notification>::with<bool>>;

/// Hears of the agents a supervisor owns: a parent session, a fleet.
using agent_owner_actor = caf::typed_actor<
  // An agent ended (every end, `answered` or not). Answers false once the owner has ended: the
  // supervisor then writes the notification to the owner's durable queue.
  caf::replies_to<agent_ended>::with<bool>,
  // How many agents run now.
  caf::reacts_to<agent_counts>,
  // News for whoever watches the owner ("agent_started").
  caf::reacts_to<notice_event>>;

/// One agent: owns the conversation, the prompt queue, the loop state and the hooks.
using session_actor = caf::typed_actor<
  // Begin the session: set-up, session.start hooks, then the turn loop.
  caf::reacts_to<start_atom>,
  // Queue an input (user prompt, notification); past the cap it is dropped with a notice.
  caf::reacts_to<submit_atom, message>,
  // Interrupt the step in flight (send with high priority).
  caf::reacts_to<interrupt_atom>,
  // From the step: the assistant reply. The session logs it (on disk, generation.post) and
  // answers whether the step may run the reply's tools (false once interrupted or ended).
  caf::replies_to<reply_atom, message>::with<bool>,
  // Add a subscriber for this session's events.
  caf::reacts_to<subscribe_atom, event_sink_actor>,
  // From the step: progress of the generation, published to the subscribers.
  caf::reacts_to<generation_progress>,
  // A task notification (a subagent or background task ended, a message from another
  // process). Idle: a turn starts with it at once; busy: it goes in before the next model
  // call (urgent: the step is interrupted and a turn starts with it). Answers false once the
  // session has ended, so the sender can write it to the durable queue instead.
  caf::replies_to<notify_atom, task_notification>::with<bool>,
  // From its agent supervisor: an agent ended, and how many still run (agent_owner_actor).
  caf::replies_to<agent_ended>::with<bool>,
  caf::reacts_to<agent_counts>,
  caf::reacts_to<notice_event>,
  // From the control endpoint (a Unix socket; the peer's uid and token already checked) and
  // the agents around it: poke (read the durable queue), interrupt, background AGENT_ID, …
  // (protocol/control.hpp). Produces a control_reply: its status, and one line saying what
  // happened.
  caf::replies_to<control_atom, control_command, std::string>::with<control_reply>,
  // Internal: the idle timeout with this serial expired.
  caf::reacts_to<due_atom, uint64_t>,
  // From the hook runner: a hook command started or ended (published to the subscribers).
  caf::reacts_to<hook_run_event>>;

/// Owns child agents: launches them (in this actor system), monitors them, keeps their
/// descriptors, enforces the depth and concurrency caps, stops or detaches them when the owner
/// ends, and tells the owner (agent_owner_actor) of every end. Assumes no parent session.
using agent_supervisor_actor = caf::typed_actor<
  // A call of an agent tool: `task` (launch or resume; background answers at once with the id,
  // foreground when the agent ends), `task_wait`, `task_output` / `task_stop` on an agent id.
  caf::replies_to<execute_atom, tool_call>::with<tool_result>,
  // From an agent it owns: its end.
  caf::replies_to<notify_atom, task_notification>::with<bool>,
  // The owner was interrupted: foreground launches answer `interrupted` and those agents are
  // interrupted; after finish(finish), the agents left to finish are stopped.
  caf::reacts_to<interrupt_atom>,
  // A control command for an agent below: background ID, interrupt-agent agents/X[/…],
  // background agents/X/… (routed down). Produces a control_reply.
  caf::replies_to<control_atom, control_command, std::string>::with<control_reply>,
  // Every agent it knows, running or ended (this run's and earlier runs').
  caf::replies_to<list_atom>::with<agent_list>,
  // The owner ends: the running agents are stopped or left to finish (answered with those
  // agents). The supervisor quits once none runs.
  caf::replies_to<finish_atom, agents_at_end>::with<agent_list>,
  // Internal: launch the next agents waiting to be spawned.
  caf::reacts_to<spawn_atom>,
  // Internal: a task_wait's timeout (its serial).
  caf::reacts_to<due_atom, uint64_t>>;

/// Runs a fleet's tasks, each a top-level session it launches, subscribes to and hears end:
/// at most N at once, within the token and cost budgets, one result line per task.
using fleet_dispatcher_actor = event_sink_actor::extend<
  // Begin launching.
  caf::reacts_to<start_atom>,
  // Stop (Ctrl+C): no task starts any more and the running ones are interrupted; their state
  // stays on disk and no result is written for them, so that a rerun resumes them.
  caf::reacts_to<interrupt_atom>,
  // Internal: launch the next tasks.
  caf::reacts_to<spawn_atom>,
  // Internal: time for a progress report.
  caf::reacts_to<progress_atom>>;

/// Runs tool calls for one session; blocking work happens off the scheduler threads.
using tool_executor_actor = caf::typed_actor<
  // Run one call. Bad input and failures are results with is_error, never CAF errors.
  caf::replies_to<execute_atom, tool_call>::with<tool_result>,
  // Abort the running call: its process group is killed and it answers as interrupted.
  caf::reacts_to<cancel_atom>,
  // The session's first model request has been made: start the shell now, ahead of its first
  // command (an agent that starts it early: tool_context::start_shell_early).
  caf::reacts_to<start_atom>,
  // Internal: a job's timeout expired.
  caf::reacts_to<due_atom, uint64_t>,
  // Internal: a job's child process ended (from its reader).
  caf::reacts_to<exited_atom, process_exit>,
  // Internal: a read-only call that ran on a thread of its own finished.
  caf::reacts_to<finished_atom, uint64_t, tool_result>,
  // Internal: a background task ended with this exit code (from its waiter).
  caf::reacts_to<exited_atom, std::string, int32_t>,
  // Internal: a task_output call stopped waiting for its task.
  caf::reacts_to<due_atom, std::string, uint64_t>,
  // The session to notify when a background task ends with nobody waiting for it.
  caf::reacts_to<subscribe_atom, session_actor>>;

/// Carries out one step: model call, then the reply's tool calls in order.
/// Runs scan tools (glob, grep) for a tool executor, on a thread of its own (so a long grep
/// blocks neither the executor nor a scheduler thread); answers the executor with
/// (finished_atom, job, result). Kept between calls: a thread per call cost ~150 µs.
using tool_runner_actor = caf::typed_actor<caf::reacts_to<execute_atom, uint64_t, tool_call>>;

/// Asks the person at the terminal whether a call may run.
using permission_asker_actor = caf::typed_actor<
  // The call and why it needs approval. Produces the verdict: yes, no or always (with an
  // edited input or a refusal's message, from a stream-json client).
  caf::replies_to<ask_atom, tool_call, std::string>::with<permission_verdict>>;

/// Calls the hooks a stream-json client registered (its initialize request's hook callback
/// ids): (callback id, the hook's input, the tool call's id) -> the callback's answer as a hook
/// command's would be (exit 0 and the JSON on stdout; an error is exit 1 with its text).
using hook_callback_actor = caf::typed_actor<
  caf::replies_to<hook_atom, std::string, nlohmann::json, std::string>::with<hook_process_result>>;

/// An asker whose questions are answered later, from outside its handler (the chat's terminal,
/// on the main thread): each question gets a number, and its answer comes back as a message.
using deferred_asker_actor = permission_asker_actor::extend<
  // The answer to question number N.
  caf::reacts_to<ask_atom, uint64_t, permission_answer>>;

/// Hears of MCP servers' states: the step actors of the agents that use their tools.
using mcp_listener_actor = caf::typed_actor<
  // A server's state changed (connected, tools listed again, failed, restarted).
  caf::reacts_to<mcp_server_report>>;

using step_actor = caf::typed_actor<
  // Run a step. Before any tool runs, the reply goes to the session as (reply_atom, message)
  // and the step waits for its answer.
  caf::replies_to<step_atom, step_request>::with<step_outcome>,
  // Ask the model for a compaction summary (no tools, text deltas not published). Failures are
  // replies with `error` set; an interrupt answers `interrupted`.
  caf::replies_to<compact_atom, model_request>::with<model_reply>,
  // Abort the step in flight; it answers `interrupted`. Sent at normal priority by the session
  // so it cannot overtake the step request it is meant to stop.
  caf::reacts_to<interrupt_atom>,
  // From the model client: progress of the generation, passed on to the session.
  caf::reacts_to<generation_progress>,
  // From an MCP server the agent uses: its state and tools now (mcp_listener_actor).
  caf::reacts_to<mcp_server_report>>;

/// Does the process's blocking file work on a thread of its own: the durable queues (read,
/// release, append, each under the queue's lock) and fsyncs. No session handler ever waits on a
/// lock held by `troupe notify` or on a disk flush. Queues are named by path; it keeps how far
/// each has been read.
using disk_io_actor = caf::typed_actor<
  // Read what is new in a queue (from its start when the flag is set, as a session that starts
  // does). The entries read stay in the file until released.
  caf::replies_to<read_atom, std::string, bool>::with<queue_read>,
  // These entries of a queue are delivered (in the transcript): drop them from the file.
  caf::reacts_to<release_atom, std::string, std::vector<std::string>>,
  // Append a notification to a queue (no cap: a write-back that must not be lost), with fsync.
  caf::reacts_to<append_atom, std::string, task_notification>,
  // fsync this descriptor, which the actor now owns, then close it.
  caf::reacts_to<sync_atom, int32_t>>;

/// Runs a session's external hook commands, each on a thread of its own, and reports every run
/// to the session (hook_run_event).
using hook_runner_actor = caf::typed_actor<
  // Run the commands of an event (for tool events, those whose matcher fits the tool) all at
  // once, each with the input on stdin; answers what they decided. No command: answers at once.
  caf::replies_to<hook_atom, hook_request>::with<hook_outcome>,
  // Internal: a command of the request with this number ended.
  caf::reacts_to<hook_atom, uint64_t, uint64_t, hook_process_result>>;

/// Names sessions: a few words for what a conversation is about, made off the session's loop.
using namer_actor = caf::typed_actor<
  // (first prompt, first reply) -> a 3-6 word name (empty when none could be made) and the
  // usage of the model call that made it (none without a model), which the session prices.
  caf::replies_to<name_atom, std::string, std::string>::with<std::string, token_usage>>;

/// Receives the HTTP engine's answers to its requests.
using http_client_actor = caf::typed_actor<
  // Status and headers, before any body byte.
  caf::reacts_to<http_response_head>,
  // Body bytes as they arrive.
  caf::reacts_to<http_body_chunk>,
  // The transfer is over (complete or failed). Nothing follows for this id.
  caf::reacts_to<http_transfer_done>>;

/// Holds back the requests of every HTTP model client of the process to a provider that asked
/// for a pause (429, 529): one client's Retry-After pauses them all, instead of each finding out
/// with a request of its own. Providers are named by their base URL.
using provider_gate_actor = caf::typed_actor<
  // May a request to this provider go? Answered at once, or when the provider's pause ends.
  caf::replies_to<admit_atom, std::string>::with<bool>,
  // The provider asked for a pause of this many milliseconds (from now): requests wait until
  // it ends (a longer pause already on stays).
  caf::reacts_to<pause_atom, std::string, int64_t>,
  // Internal: a provider's pause may be over.
  caf::reacts_to<due_atom, std::string>>;

/// A model client that talks HTTP through the engine.
using http_model_actor = model_client_actor::extend_with<http_client_actor>;

/// One configured MCP server: owns its connection (a child process speaking JSON-RPC on its
/// stdin and stdout, or HTTP requests through the engine), so a slow or dead server blocks no
/// agent. Agents of one process share it, or each has its own (the server's `scope`).
using mcp_server_actor = caf::typed_actor<
  // Subscribe: answered with the state now; every later change follows as a message.
  caf::replies_to<subscribe_atom, mcp_listener_actor>::with<mcp_server_report>,
  // The state once start-up is over (connected or failed) or `timeout_ms` has passed (0: at
  // once): the CLI's bounded wait before the first model request, `troupe mcp list`.
  caf::replies_to<list_atom, int64_t>::with<mcp_server_report>,
  // Call one of its tools (the call's name is mcp__<server>__<tool>). Failures are error
  // results, never CAF errors; a dead server is started again first (a bounded number of
  // times). Images it returns are saved in the directory named (empty: not saved); progress
  // notifications reach `session` as notices (may be null).
  caf::replies_to<execute_atom, tool_call, std::string, session_actor>::with<tool_result>,
  // Give up the call with this id (an interrupt): the server is sent notifications/cancelled
  // and the call answers as interrupted.
  caf::reacts_to<cancel_atom, std::string>,
  // Internal: a line of its process's stdout (the process's serial: restarts count up).
  caf::reacts_to<mcp_atom, uint64_t, std::string>,
  // Internal: its process ended (serial, exit code, the tail of its stderr).
  caf::reacts_to<exited_atom, uint64_t, int32_t, std::string>,
  // Internal: a timeout (a request's, start-up's) with this serial.
  caf::reacts_to<due_atom, uint64_t>>::extend_with<http_client_actor>;

/// The front end of a stream-json client (orchestrator/stream_json_client): it asks the client
/// about calls (--permission-prompt-tool stdio) and runs its hook callbacks.
using stream_client_actor = permission_asker_actor::extend_with<hook_callback_actor>::extend<
  // The session it drives, once launched, and its id.
  caf::reacts_to<client_atom, session_actor, std::string>,
  // A line of stdin.
  caf::reacts_to<client_atom, std::string>,
  // The end of stdin.
  caf::reacts_to<client_atom>,
  // A JSON-RPC message for the MCP server of this name that lives in the client (the Agent
  // SDK's createSdkMcpServer), sent as an mcp_message request: answered with the client's
  // mcp_response (for a notification, its acknowledgement).
  caf::replies_to<mcp_atom, std::string, nlohmann::json>::with<nlohmann::json>,
  // The actor of an MCP server of the run: the client's own servers' messages go to it, and
  // mcp_status asks it.
  caf::reacts_to<mcp_atom, std::string, mcp_server_actor>>;

} // namespace troupe
