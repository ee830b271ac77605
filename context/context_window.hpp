#pragma once
// What the model sees of a session's log: the messages since the last compact boundary, old
// large tool results elided, with a running token estimate calibrated by the provider's usage.
// Every operation costs in proportion to the messages since the boundary (or less), never to
// the whole transcript.

#include <cstdint>
#include <string>
#include <vector>

#include "context/token_budget.hpp"
#include "protocol/message.hpp"

namespace troupe {

/// Returns true for a compact boundary message: a system message (origin compact_boundary)
/// whose content is the summary.
bool is_compact_boundary(const message& m);

/// Returns true for an undo or clear marker (the system messages /undo and /clear write; the
/// model never sees them): the transcript keeps everything, and these say what left the view.
/// An undo marker's meta names the first message it took out ("from"); a clear marker empties
/// the view.
bool is_view_marker(const message& m);

/// Returns true for what says nothing about whether a conversation waits for an answer: a
/// compact boundary (a compaction mid-turn leaves it last), the context a SessionStart hook
/// added, an /undo or /clear marker.
bool is_bookkeeping(const message& m);

/// Returns true when a conversation whose last message other than bookkeeping is `m` waits for
/// the model: `m` is the user's (a prompt, news, a hook's input), a tool result, or a reply
/// whose calls never got their results (the process died before they ran). A resumed session
/// answers it first (crash recovery), the lost calls with an error result.
bool awaits_answer(const message& m);

/// Returns true for a message that started a turn (marked so when it was logged; older
/// transcripts: a prompt or a parent's message).
bool starts_turn(const message& m);

/// What a compaction summarises and what it keeps.
struct compaction_plan {
  /// The messages to summarise, oldest first (a previous summary first, if any).
  std::vector<message_ptr> to_summarize;
  /// The id of the first message kept verbatim after the summary; empty: none is kept.
  std::string preserved_from;
  /// Estimated tokens of the kept messages.
  int64_t preserved_tokens = 0;

  bool empty() const { return to_summarize.empty(); }
};

class context_window {
public:
  explicit context_window(context_budget budget = {});

  const context_budget& budget() const { return budget_; }

  /// Tokens every request carries besides the messages: system prompt and tool definitions.
  void set_fixed_tokens(int64_t tokens) { fixed_tokens_ = tokens; }

  /// Takes the next message of the log, in log order. A compact boundary replaces everything
  /// before it with its summary, keeping the messages it names as preserved.
  void append(const message_ptr& m);

  /// The messages a request sends, in order.
  context_snapshot snapshot() const;

  /// Messages in the view (the summary counts as one).
  size_t size() const { return entries_.size(); }

  /// Tool results currently shown as an elision note instead of their output.
  size_t elided_count() const { return elided_; }

  /// Raw estimate of a request with this context: fixed tokens plus the messages.
  int64_t estimated_tokens() const { return fixed_tokens_ + message_tokens_; }

  /// The estimate scaled by the calibration: the expected input tokens of the next request.
  int64_t projected_tokens() const { return project(estimated_tokens()); }

  /// A raw estimate scaled by the calibration.
  int64_t project(int64_t raw) const;

  /// Raw estimate of a request right after a compaction that writes `boundary` for `plan`.
  int64_t estimated_after(const message& boundary, const compaction_plan& plan) const;

  /// True when the next request should be compacted first.
  bool over_threshold() const { return projected_tokens() > budget_.compact_threshold(); }

  /// The provider counted `reported` input tokens for a request estimated at `estimated`:
  /// later projections are scaled by their ratio. Counts more than 4x off the estimate are
  /// ignored (placeholder usage from proxies and test servers).
  void calibrate(int64_t estimated, int64_t reported);

  double calibration() const { return calibration_; }

  /// The id of the message that started the last turn in view; empty when there is none since
  /// the last compaction or clear.
  std::string last_turn_start() const;

  /// Messages in view from the one with this id to the end (0 when it is not in view).
  size_t count_from(const std::string& id) const;

  /// Replaces the budget (after a switch to another model).
  void set_budget(const context_budget& budget) { budget_ = budget; }

  /// Splits the view for a compaction: the recent messages that fit the preserve budget,
  /// starting at a user or assistant message (never at a tool result, which would lose its
  /// call), are kept; everything before is summarised. Empty when there is nothing to compact.
  compaction_plan plan_compaction() const;

private:
  struct entry {
    message_ptr original;
    message_ptr shown;
    int64_t tokens = 0;
    bool elided = false;
  };

  void push(entry e);
  void elide_old_results();
  /// Keeps the first `n` entries and counts their tokens again.
  void keep_first(size_t n);

  context_budget budget_;
  std::vector<entry> entries_;
  int64_t fixed_tokens_ = 0;
  int64_t message_tokens_ = 0;
  int64_t tool_tokens_ = 0;
  size_t elided_ = 0;
  /// Results before this index have been considered for elision.
  size_t elide_cursor_ = 0;
  /// The latest assistant message: results after it belong to the current step, never elided.
  size_t last_assistant_ = 0;
  double calibration_ = 1.0;
};

/// The user message a boundary becomes in the context: the summary with a short preface.
message summary_message(const message& boundary);

} // namespace troupe
