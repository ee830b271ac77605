#pragma once
// The system prompt, built from the same tool specs the parser reads.

#include <string>

#include "tools/registry.hpp"
#include "tools/tool_parser.hpp"

namespace troupe {

/// Returns the system prompt. In the markdown format it describes each tool with examples
/// rendered by the serializer the parser reads back (so the prompt cannot drift from the
/// parser); with native tool calling the tools travel in the request instead.
std::string build_system_prompt(const tool_registry& registry, tool_format format);

} // namespace troupe
