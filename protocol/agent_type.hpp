#pragma once
// A custom subagent type, as a markdown file with front matter defines it (Claude Code's
// `.claude/agents/NAME.md`): what the task tool's `subagent_type` picks. Configuration the
// orchestrator reads at start-up and hands down as data; never a message.

#include <memory>
#include <string>
#include <vector>

namespace troupe {

/// The type Claude Code's models name when they want no custom one: troupe's own subagent.
inline constexpr const char* general_agent_type = "general-purpose";

/// One subagent type.
struct agent_type {
  /// What `subagent_type` says ("code-reviewer").
  std::string name;
  /// When to use it: listed in the task tool's description.
  std::string description;
  /// troupe's names of the tools it may use; empty: all of its parent's.
  std::vector<std::string> tools;
  /// troupe's names of tools it may not use, of those.
  std::vector<std::string> disallowed_tools;
  /// A model spec ("anthropic/…", "scripted:PATH"); empty: its parent's (`inherit`).
  std::string model;
  /// Its instructions (the file's body), added to the system prompt.
  std::string prompt;
  /// The file that defines it.
  std::string file;
};

/// The types one workspace defines, by name in order (the user's, then the project's, which
/// replace the user's of the same name).
using agent_types = std::vector<agent_type>;

} // namespace troupe
