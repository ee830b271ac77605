#pragma once
// The compaction request (the model summarises the older part of the conversation) and the
// boundary message that records its result.

#include <cstdint>
#include <string>

#include "context/context_window.hpp"
#include "protocol/model.hpp"

namespace troupe {

/// Why a compaction ran.
struct compaction_trigger {
  /// "auto" (the projected request passed the threshold, or the provider refused the prompt
  /// as too long) or "manual" (/compact).
  std::string kind = "auto";
  /// True when a prompt-too-long answer caused it.
  bool reactive = false;
  /// The user's /compact instructions and what pre-compact hooks added.
  std::string instructions;
};

/// Builds the summarisation request: the plan's messages as a plain-text transcript (each tool
/// result cut to its head and tail; the oldest messages left out if the transcript would not
/// fit the window) and the compaction instructions. No tools are offered.
model_request compaction_request(const compaction_plan& plan, const compaction_trigger& trigger,
                                 const context_budget& budget);

/// What a finished compaction changed, for the boundary's metadata.
struct compaction_record {
  compaction_trigger trigger;
  std::string summary;
  int64_t tokens_before = 0;
  int64_t tokens_after = 0;
  int64_t summarized_messages = 0;
  std::string preserved_from;
};

/// The system message that marks the compaction in the log: its content is the summary, its
/// meta the trigger and token counts.
message make_boundary(const compaction_record& record);

} // namespace troupe
