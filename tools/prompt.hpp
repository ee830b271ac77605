#pragma once
// The system prompt, built from the same tool specs the parser reads.

#include <string>

#include "tools/registry.hpp"

namespace troupe {

/// Returns the system prompt describing each tool, with markdown examples rendered by the
/// serializer the parser reads back (so the prompt cannot drift from the parser).
std::string build_system_prompt(const tool_registry& registry);

} // namespace troupe
