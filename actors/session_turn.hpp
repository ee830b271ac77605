#pragma once
// The session's turn in flight (private to the session's sources): what lives only for it, and
// what the session waits for while external hooks run, as a value an interrupt carries out.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <caf/typed_response_promise.hpp>

#include "protocol/loop_state.hpp"
#include "protocol/message.hpp"

namespace troupe {

/// How a compaction ended.
enum class compaction_status { done, failed, interrupted };

/// What the session does once a compaction ends: a value, not a stored closure, so that the
/// hook wait (and an interrupt) carries no code.
struct compaction_next {
  enum class kind {
    step,         ///< auto, before a step: the step goes out (on the compacted context)
    step_again,   ///< reactive, after the model refused the context: the same step again
    command,      ///< /compact: the session takes its next input
  };
  kind what = kind::step;
  /// step_again: the provider's refusal, for the turn's error if the compaction fails too.
  std::string refused;
};

/// What an interrupt does while the session waits for external hooks: one value per place that
/// waits, with what carrying it out needs (interrupt_hooks does it).
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
  /// pre_compact: what follows the compaction.
  compaction_next compaction;

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
  static hook_wait pre_compact(compaction_next then) {
    auto wait = of(kind::pre_compact);
    wait.compaction = std::move(then);
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
  /// Why the turn cannot go on, for a parent to read when no error says it: the refused call
  /// of a permission_blocked end, the step cap of a max_turns end.
  std::string end_cause;
  /// The external hooks waited for (what an interrupt does meanwhile), and the wait's serial:
  /// an answer to an older wait is stale. Serials never repeat.
  hook_wait hooks;
  uint64_t hook_wait_serial = 0;
};

} // namespace troupe
