#pragma once
// The system prompt, built from the same tool specs the parser reads.

#include <string>

#include "tools/registry.hpp"
#include "tools/tool_parser.hpp"

namespace troupe {

/// troupe's own instructions: the part of the system prompt that says what the agent is and
/// how it works (Claude Code's --system-prompt replaces it).
extern const char* const default_instructions;

/// Returns the system prompt: `instructions`, then for the text formats how tools are called.
/// In the markdown format it describes each tool with examples rendered by the serializer the
/// parser reads back (so the prompt cannot drift from the parser); with native tool calling the
/// tools travel in the request instead.
std::string build_system_prompt(const tool_registry& registry, tool_format format,
                                const std::string& instructions = default_instructions);

} // namespace troupe
