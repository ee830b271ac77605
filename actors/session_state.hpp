#pragma once
// Private to the session's sources: its state and the loop functions its handlers call.

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include <caf/stateful_actor.hpp>
#include <caf/typed_response_promise.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/session.hpp"
#include "actors/session_inbox.hpp"
#include "actors/step.hpp"
#include "actors/transcript.hpp"
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

enum class compaction_status { done, failed, interrupted };
using compaction_done = std::function<void(compaction_status, const std::string& why)>;

/// What an interrupt does while the session waits for external hooks: one value per place that
/// waits, with what carrying it out needs (interrupt_hooks does it). PreCompact keeps the one
/// closure: the compaction's own continuation, which its three callers pass in.
struct hook_wait {
  enum class kind {
    none,            ///< no interruptible hooks run
    session_start,   ///< SessionStart: the loop is entered, and the turn it starts stops
    prompt_submit,   ///< UserPromptSubmit: the prompt (if one) is logged, then the turn stops
    finished_turn,   ///< Stop or LoopContinue after a normal turn: the turn is over
    final_stop,      ///< Stop of a turn that cannot go on: its end, decided already, follows
    step_pre,        ///< StepPre: the turn stops before the model call
    generation_post, ///< GenerationPost: the step is told that no tool runs
    pre_compact,     ///< PreCompact: the compaction ends `interrupted`
    session_end,     ///< SessionEnd: the ended session does not wait for them
  };
  kind what = kind::none;
  /// session_start: the transcript ends with a message the first turn answers.
  bool unanswered = false;
  /// prompt_submit: the prompt, not logged yet (none for news, logged already).
  std::optional<message> prompt;
  /// final_stop: how the session ends; none: it takes the next input.
  std::optional<terminal_reason> end;
  /// generation_post: the step's question whether the reply's tools may run.
  caf::typed_response_promise<bool> may_run_tools;
  /// pre_compact: the compaction's continuation.
  compaction_done compaction;

  /// Returns the wait of each place, with what its interrupt needs.
  static hook_wait session_start(bool answer_first) {
    auto wait = of(kind::session_start);
    wait.unanswered = answer_first;
    return wait;
  }
  static hook_wait prompt_submit(std::optional<message> unlogged) {
    auto wait = of(kind::prompt_submit);
    wait.prompt = std::move(unlogged);
    return wait;
  }
  static hook_wait finished_turn() { return of(kind::finished_turn); }
  static hook_wait final_stop(std::optional<terminal_reason> then_end) {
    auto wait = of(kind::final_stop);
    wait.end = then_end;
    return wait;
  }
  static hook_wait step_pre() { return of(kind::step_pre); }
  static hook_wait generation_post(caf::typed_response_promise<bool> answer) {
    auto wait = of(kind::generation_post);
    wait.may_run_tools = std::move(answer);
    return wait;
  }
  static hook_wait pre_compact(compaction_done done) {
    auto wait = of(kind::pre_compact);
    wait.compaction = std::move(done);
    return wait;
  }
  static hook_wait session_end() { return of(kind::session_end); }

private:
  static hook_wait of(kind what) {
    hook_wait wait;
    wait.what = what;
    return wait;
  }
};

/// What lives for the turn in flight, and the hook waits around it. Written only by the turn
/// code: session_turns.cpp, session_steps.cpp, and session_hooks.cpp (the hook wait).
struct turn_context {
  /// An interrupt is to stop the turn at its next step boundary.
  bool interrupt_requested = false;
  /// An interrupt came before the first turn could start: it stops that turn.
  bool interrupt_before_start = false;
  /// An urgent notification interrupted the step: the turn it starts must not be dropped.
  bool urgent_pending = false;
  /// Context that GenerationPost hooks returned: logged before the next model call (after the
  /// reply's tool results).
  std::vector<message> pending_hook_context;
  /// The last step that ran tools had a call refused: a turn that then ends without another
  /// tool round made no progress because of permissions.
  bool last_tool_step_denied = false;
  /// The external hooks waited for (what an interrupt does meanwhile), and the wait's serial:
  /// an answer to an older wait is stale. Serials never repeat.
  hook_wait hooks;
  uint64_t hook_wait_serial = 0;
};

struct session_state {
  session_config config;
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

/// Runs a slash command. Returns false for ordinary text. A command that starts a compaction
/// leaves the session compacting; the loop resumes when it is done.
bool run_command(session_ptr self, const message& input);

/// Failed compactions in a row after which auto-compaction stays off for the session.
inline constexpr int32_t compaction_breaker = 3;

/// True once the circuit breaker tripped.
bool auto_compaction_off(const session_state& st);

/// Has the model summarise the older part of the context, logs the boundary (the summary) and
/// calls `done`, always later, from a message handler. Returns false, without calling `done`,
/// when there is nothing to compact. The session stays responsive: the step waits for the model.
bool compact(session_ptr self, compaction_trigger trigger, compaction_done done);

/// True when external hook commands are configured for the event.
bool has_hooks(const session_state& st, hook_event event);

/// Runs the event's external hooks with `input` and calls `then` with what they decided, later,
/// from a handler; at once with an empty outcome when the event has none. While they run the
/// session waits in `wait` (what an interrupt does instead). Once the session has ended `then`
/// is not called, unless for SessionEnd.
void run_hooks(session_ptr self, hook_event event, nlohmann::json input,
               std::function<void(const hook_outcome&)> then, hook_wait wait);

/// An interrupt came while hooks ran: their wait is abandoned, and what it stands for is carried
/// out. Returns false when no interruptible hooks were running.
bool interrupt_hooks(session_ptr self);

/// Logs a hook's additional context for the model: a user message, origin "hook". Returns false
/// once the session has ended.
bool log_hook_context(session_ptr self, hook_event event, const std::string& text);

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
/// moment for more, so that a burst is one turn: returns true when it waits (a timer starts
/// the turn), false when it should start its turn now.
bool gather_news(session_ptr self, std::vector<message> news);

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
