#pragma once
// The continuation prompt: what the model is told when its reply was cut at the output limit.

#include <string>

#include "protocol/message.hpp"

namespace troupe {

/// Builds the user message (origin "continuation") that asks the model to go on from where the
/// output limit cut `so_far`: the calls it already made stand, and `cut_call` (the tool whose
/// call was cut half-written and dropped; empty: none) must be made again in full.
message continuation_prompt(const message& so_far, const std::string& cut_call);

} // namespace troupe
