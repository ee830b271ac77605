#pragma once
// Private to the session's sources: its state and the loop functions its handlers call.
//
// The state is split by lifetime and owner:
// - config(): what the session was set up with, read-only once the behaviour is built
//   (session.cpp sets it). What the session changes later is state of its own: current_model
//   (/model, session_commands.cpp) and parent (dropped on detach: session.cpp,
//   session_notifications.cpp).
// - inbox (session_inbox): the prompt queue, news held while busy and the exactly-once record of
//   notifications. Its containers are reached only through its methods.
// - turn (turn_context, session_turn.hpp): the turn in flight and the hook wait. Written only by session_turns.cpp,
//   session_steps.cpp and session_hooks.cpp (the wait, and what an interrupt of it does); the
//   other files call their functions (interrupt_for_news, take_interrupt_request, first_turn).
// - The rest lives as long as the session. The log, the context window and the files are
//   written by session_log.cpp (append_message, the end) and session_start.cpp (the start); the
//   window's budget also by /model, its calibration by session_steps.cpp. The subagents' counts
//   and what they left: session_agents.cpp and session.cpp. The name: the namer's answer
//   (session_steps.cpp), /rename, and the end's fallback. phase, info, usage and
//   last_assistant_text are the loop's shared record.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/session.hpp"
#include "actors/session_inbox.hpp"
#include "actors/session_turn.hpp"
#include "actors/step.hpp"
#include "store/state_files.hpp"
#include "store/transcript.hpp"
#include "context/compaction.hpp"
#include "context/context_window.hpp"

namespace troupe {

enum class session_phase {
  created,  ///< spawned, waiting for start_atom
  idle,     ///< interactive and waiting for input
  stepping, ///< a step is in flight
  compacting, ///< a compaction summary is being written
  hooking,  ///< between inputs and steps, external hooks run (inputs and news queue up)
  ended,    ///< terminal state reached
};

/// The model the session uses now: the configured one until /model switches it.
struct session_model {
  std::string name;
  tool_format format = tool_format::markdown;
  shared_value<std::string> system_prompt;
  context_budget budget;
};

struct session_state {
  /// What the session was set up with: set once, when its behaviour is built, then read-only.
  const session_config& config() const { return *config_; }
  void set_config(session_config config) {
    config_ = std::make_shared<const session_config>(std::move(config));
  }

  /// The model in use (/model changes it).
  session_model current_model;
  /// A subagent's parent, told when this session ends; unset once the parent has ended and let
  /// this agent finish (detached).
  agent_parent_actor parent;
  /// The earlier run's messages, until the start replays them into the log.
  std::vector<message> history;
  std::vector<message_ptr> log;
  /// The prompt queue, news held while busy, and the exactly-once record of notifications.
  session_inbox inbox;
  loop_state state;
  transcript_writer transcript;
  json_file state_file;
  /// session.json: what `troupe ls` shows; rewritten at the start, after each turn, at the end.
  session_info info;
  json_file info_file;
  std::vector<event_sink_actor> subscribers;
  step_actor step;
  model_client_actor model;
  tool_executor_actor executor;
  /// What the model is sent: the log since the last compact boundary, with token counts.
  context_window window;
  /// The raw token estimate of the request in flight, to calibrate against the reported usage.
  int64_t sent_estimate = 0;
  session_phase phase = session_phase::created;
  /// The turn in flight.
  turn_context turn;
  /// start_atom was taken: set-up runs once.
  bool begun = false;
  /// The runner of the external hooks, and the events that have commands.
  hook_runner_actor hooks;
  std::set<hook_event> hook_events;
  /// The namer was asked for a name (once per run), and its answer has not come yet.
  bool naming = false;
  bool name_pending = false;
  token_usage usage;
  /// This run's cost, its subagents' included (the result line's; session.json has the total).
  double run_cost_usd = 0;
  std::string last_assistant_text;
  /// A subagent's final answer of each turn of this run: a child resumed while it ran reports
  /// every job it was given, not only the last.
  std::vector<std::string> turn_answers;
  /// Every call the permission check refused, for the session_ended event.
  std::vector<permission_denial> permission_denials;
  std::chrono::steady_clock::time_point started_at = std::chrono::steady_clock::now();
  /// Owns this session's subagents (null when it cannot launch any), and how many of them run.
  agent_supervisor_actor agents;
  agent_counts agents_running;
  /// The subagents still running when this session ended (stopped, or left to finish).
  std::vector<agent_descriptor> agents_left;
  /// Ended, and waiting for the supervisor to see the agents it left to finish end.
  bool waiting_for_agents = false;
  /// A subagent whose parent ended and let it finish: its end goes to the parent's durable
  /// queue, and its own terminal event says `backgrounded`.
  bool detached = false;
  /// When news last started a turn, and the timer (its serial) of news gathered while idle:
  /// news that follows news closely waits a moment for more, so a burst is one turn.
  std::chrono::steady_clock::time_point last_news_turn;
  uint64_t news_serial = 0;
  /// The idle timeout in force (its serial); 0: none. Serials never repeat.
  uint64_t idle_serial = 0;
  uint64_t idle_timers = 0;
  /// What the ended session still waits for before it quits: the parent's answer to its end
  /// notification, a name being written.
  int end_waits = 0;
  /// The terminal event, held until nothing is waited for.
  std::optional<session_ended_event> ended_event;
  /// Time this run spent waiting for the model.
  int64_t api_ms = 0;
  /// The turn in flight, for its turn_ended_event (report_turns): what the counters said when
  /// it started, and how it ended when not `completed`.
  struct turn_record {
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
    /// total_steps when it started: its own steps are the rest.
    int32_t steps = 0;
    terminal_reason reason = terminal_reason::completed;
    std::string error;
    model_error_kind error_kind = model_error_kind::none;
  };
  std::optional<turn_record> open_turn;
  /// What the last turn report counted up to: the next one reports what came after it (a
  /// subagent's cost that arrives between turns included).
  token_usage reported_usage;
  double reported_cost = 0;
  size_t reported_denials = 0;
  int64_t reported_api_ms = 0;
  /// A slash command's report waits for the compaction it started.
  bool command_report_pending = false;
  /// The client said no more input comes (control end-input).
  bool input_closed = false;
  /// A model switch asked for while busy, made when the turn ends.
  std::string pending_model;
  /// The permission mode the client set (control permission-mode), in force from the next
  /// step on; none: the config's.
  std::optional<permission_mode> mode_override;

private:
  std::shared_ptr<const session_config> config_;
};

using session_ptr = session_actor::stateful_pointer<session_state>;

/// The step actor's configuration from the session's (its model's prompt and format, the
/// permission policy, the hooks around tool calls).
step_config make_step_config(const session_state& st);

/// Sets up and enters the turn loop (session.start hooks, crash recovery, first input).
void begin_session(session_ptr self);

/// Queues an input; starts a turn at once when the session is idle.
void accept_input(session_ptr self, message input);

/// Logs the step's reply (before its tools run) and fires generation.post. Returns whether
/// the step may run the reply's tools.
caf::result<bool> accept_reply(session_ptr self, message reply);

/// Reaches a terminal state: state saved, session.end hooks, the ended event, peers stopped.
void end_session(session_ptr self, terminal_reason reason, std::string error = {},
                 model_error_kind kind = model_error_kind::none);

/// Forwards an interrupt to the step (or compaction) in flight, and stops foreground subagents.
/// Idle, it clears the queue (interactive) or ends the run `interrupted`. Returns what it did.
std::string request_interrupt(session_ptr self);

/// Waits for input; with an idle timeout, the session ends `completed` when none comes.
void go_idle(session_ptr self);

/// The turn in flight ends other than `completed` (report_turns): its turn_ended_event says so.
void note_turn_end(session_ptr self, terminal_reason reason, std::string error = {},
                   model_error_kind kind = model_error_kind::none);

/// Publishes the turn_ended_event of the turn in flight, if one is open (report_turns).
void report_turn_end(session_ptr self);

/// Publishes the report of a slash command a client sent (report_turns): a success with no
/// model call and an empty result, as Claude Code answers one.
void report_command(session_ptr self);

/// A summary of the session so far as the terminal event says it (the ended event and every
/// turn's), with this reason and error.
session_ended_event summarise(const session_state& st, terminal_reason reason, std::string error,
                              model_error_kind kind);


// Shared by the loop (session_turns.cpp) and the subagent and notification handling
// (session_agents.cpp).

/// Sends an event to every subscriber.
template <class Event>
void publish(session_ptr self, const Event& event) {
  for (auto& sink : self->state.subscribers)
    self->send(sink, event);
}

/// Drops the queued inputs (each named in an `input_dropped` notice); notifications stay.
void drop_queue(session_ptr self, const std::string& why);

/// Queues an input; past the cap it is dropped with a `queue_overflow` notice.
void enqueue(session_ptr self, message input);

/// Rewrites state.json with the loop state (a failure is a warning notice).
void save_state(session_ptr self);

/// Runs the in-process hooks of a point in order and returns the messages they made (origin
/// "hook"); a hook that throws is reported and skipped.
std::vector<message> fire(session_ptr self, hook_point point);

/// Fires a point's in-process hooks and queues their messages as inputs.
void fire_and_enqueue(session_ptr self, hook_point point);

/// Takes the next input: a slash command runs, anything else starts a turn; with nothing
/// queued the session waits (interactive, waiting for news) or ends.
void next_turn(session_ptr self);

/// A turn starts (its input is logged): counters, TURN_PRE in-process hooks, the first step.
void start_turn(session_ptr self);

/// The next step of the turn, or the step cap's end of it.
void run_next_step(session_ptr self);

/// A turn that ended normally: TURN_POST (Stop may continue it once), LoopContinue, the next
/// input.
void end_turn(session_ptr self);

/// TURN_POST of a turn that cannot go on (complete, a run's step cap, permissions): the Stop
/// hooks are told, then the session ends with `end`, or takes the next input when none.
void end_turn_for_good(session_ptr self, std::optional<terminal_reason> end);

/// After a turn that cannot go on: the session ends with `end`, or takes the next input.
void after_final_turn(session_ptr self, std::optional<terminal_reason> end);

/// An interrupt while a finished turn's hooks run: the turn is over whatever they would say; a
/// headless run ends `interrupted`, a chat drops what was queued and waits for input.
void after_interrupted_turn(session_ptr self);

/// The session's first turn, once start-up is done: the turn the process died in is answered
/// first (`unanswered`) unless news starts it; an interrupt that came meanwhile stops it.
void first_turn(session_ptr self, bool unanswered);

/// Reads what waits in the durable queue, then takes the first turn.
void enter_loop(session_ptr self, bool unanswered);

/// An urgent notification arrived while busy: the step stops, and the next turn starts with it.
void interrupt_for_news(session_ptr self);

/// Takes the interrupt requested for the work in flight: true when one was.
bool take_interrupt_request(session_ptr self);

/// The turn stops (interrupted, or a declined call): a note, TURN_POST, then control back to
/// the user (interactive) or the run's end.
void stop_turn_interrupted(session_ptr self, bool declined);

/// Switches to the model `spec` names (config().switch_model) between steps: a new model client
/// and step, the window's budget, and a system note in the log (`note`, else "The model is now
/// …"). Returns why it could not, empty when it did.
std::string change_model(session_ptr self, const std::string& spec, const std::string& note);

/// Runs a slash command. Returns false for ordinary text. A command that starts a compaction
/// leaves the session compacting; the loop resumes when it is done.
bool run_command(session_ptr self, const message& input);

/// Failed compactions in a row after which auto-compaction stays off for the session.
inline constexpr int32_t compaction_breaker = 3;

/// True once the circuit breaker tripped.
bool auto_compaction_off(const session_state& st);

/// Has the model summarise the older part of the context, logs the boundary (the summary) and
/// then does what `then` says (compaction_ended), always later, from a message handler. Returns
/// false, doing nothing, when there is nothing to compact. The session stays responsive: the
/// step waits for the model.
bool compact(session_ptr self, compaction_trigger trigger, compaction_next then);

/// Goes on after a compaction: the step, the same step again, or the next input.
void compaction_ended(session_ptr self, const compaction_next& then, compaction_status status,
                      const std::string& why);

/// True when external hook commands are configured for the event.
bool has_hooks(const session_state& st, hook_event event);

/// Runs the event's external hooks with `input` and calls `then` with what they decided, later,
/// from a handler; at once with an empty outcome when the event has none. While they run the
/// session waits in `wait` (what an interrupt does instead). Once the session has ended `then`
/// is not called, unless for SessionEnd. A hook that answers "continue": false stops the
/// session instead (stop_for_hook), but at SessionEnd.
void run_hooks(session_ptr self, hook_event event, nlohmann::json input,
               std::function<void(const hook_outcome&)> then, hook_wait wait);

/// An interrupt came while hooks ran: their wait is abandoned, and what it stands for is carried
/// out. Returns false when no interruptible hooks were running.
bool interrupt_hooks(session_ptr self);

/// Logs a hook's additional context for the model: a user message, origin "hook". Returns false
/// once the session has ended.
bool log_hook_context(session_ptr self, hook_event event, const std::string& text);

/// A hook of `event` answered "continue": false: a system note (origin "hook_blocked", `meta`
/// added to its own) says so and the session ends `hook_stopped`, its stopReason the error.
void stop_for_hook(session_ptr self, hook_event event, const std::string& reason,
                   const nlohmann::json& meta = nlohmann::json::object());

/// Queues the messages hooks returned as the next inputs (origin "hook").
void queue_hook_messages(session_ptr self, const hook_outcome& outcome);

/// Appends a message to the log: on disk first, then in memory, then to the subscribers.
/// Returns false when the write failed (the session has then ended).
bool append_message(session_ptr self, message msg);

/// Counts a model call's usage into the session's usage and cost.
void count_usage(session_ptr self, const token_usage& usage);

/// Rewrites session.json with the session's state now.
void save_info(session_ptr self);

/// Tells the subscribers whether the session works or waits, with its model, name and usage.
void publish_status(session_ptr self, bool busy);

/// Publishes a notice to the subscribers.
void publish_notice(session_ptr self, std::string kind, std::string text);

/// Puts an input first in the queue and starts a turn with it when the session is idle.
void enqueue_first(session_ptr self, message input);

/// <session>/queue.jsonl: the session's durable queue.
std::filesystem::path queue_path(const session_state& st);

/// Turns a notification into the user message that delivers it.
message notification_message(const task_notification& n);

/// Takes a notification by the delivery rules. Returns false once the session has ended.
bool accept_notification(session_ptr self, task_notification n);

/// News close behind the last turn news started (within the news window) is queued to wait a
/// moment for more, so that a burst is one turn: true when news now waits rather than starting
/// its turn at once.
bool news_waits(const session_state& st);

/// Queues news (ahead of the prompts) and starts the timer whose end starts its turn.
void wait_for_more_news(session_ptr self, std::vector<message> news);

/// Logs notifications taken together, in order. Past the session's notification budget (bytes)
/// each further agent or task result is logged as a summary line (task_output reads it whole).
/// Returns false once the session has ended.
bool log_news(session_ptr self, std::vector<message> news);

/// Has the disk actor read what is new in queue.jsonl (all of it when `from_start`), takes
/// each notification in it, then calls `done` with how many were new.
void read_durable_queue(session_ptr self, bool from_start, std::function<void(size_t)> done);

/// A message reached the log: a notification read from queue.jsonl is now delivered, and the
/// file is emptied once all of them are.
void note_logged(session_ptr self, const message& m);

/// The supervisor says a subagent ended: its cost counts, and unless its result reached the
/// model already, its notification is taken. Returns false once the session has ended.
bool accept_agent_end(session_ptr self, agent_ended end);

/// Carries out a control command from another process (token already checked) or an agent
/// around this one.
caf::result<control_reply> run_control(session_ptr self, control_command command,
                                       const std::string& arg);

/// True while a background subagent runs: a non-interactive session waits for its news.
bool waiting_for_children(const session_state& st);

/// Answers foreground launches and task_waits as interrupted and stops those subagents.
void interrupt_agents(session_ptr self);

/// At the end: subagents stopped or left to finish (the supervisor answers which; one more of
/// end_waits until it does), undelivered notifications written back to the durable queue, the
/// parent told (one more of end_waits until it answers).
void finish_agents(session_ptr self, terminal_reason reason, const std::string& error);

/// One thing an ended session waited for is done; the last one lets it quit.
void end_wait_done(session_ptr self);

} // namespace troupe
