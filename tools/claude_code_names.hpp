#pragma once
// Claude Code's names for troupe's tools and their inputs, both ways: what a Claude Code hook
// script, an Agent SDK `canUseTool` callback or a `--allowedTools 'Bash(git *)'` flag says is
// translated at the edge, and troupe's own names stay inside.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace troupe {

/// Claude Code's name for a troupe tool ("shell" → "Bash", "read" → "Read", "task" → "Task");
/// a tool Claude Code has no name for keeps its own.
std::string claude_tool_name(std::string_view troupe_name);

/// troupe's name for a tool named either way: Claude Code's ("Bash", "BashOutput", "KillShell",
/// "Agent", …) or troupe's own ("shell"); nullopt for a name neither knows (e.g. "WebFetch").
std::optional<std::string> troupe_tool_name(std::string_view name);

/// Every Claude Code name that leads to a troupe tool (for messages listing what is known).
std::vector<std::string> claude_tool_names();

/// A call's input in Claude Code's field names: `path` is `file_path` for read, write, edit
/// and patch; read's `start_line`/`end_line` are `offset`/`limit`; grep's `ignore_case` and
/// `context` are `-i` and `-C`. Fields without a counterpart keep their names.
nlohmann::json claude_tool_input(std::string_view troupe_name, const nlohmann::json& input);

/// The inverse of claude_tool_input, for an input written in Claude Code's names (a
/// `canUseTool` answer's `updatedInput`, a hook's `updatedInput`); troupe's own names pass
/// through unchanged, so an input in either spelling comes out in troupe's.
nlohmann::json troupe_tool_input(std::string_view troupe_name, const nlohmann::json& input);

/// Claude Code's name for a permission mode given in troupe's spelling ("default",
/// "accept-edits", "plan", "bypass" → "default", "acceptEdits", "plan", "bypassPermissions").
std::string claude_permission_mode(std::string_view troupe_mode);

/// A permission rule in either spelling as troupe's: "Bash(git *)" → "shell(git *)",
/// "Read(src/**)" → "read(src/**)". Claude Code's `Edit` rules cover every tool that edits
/// files, so "Edit(docs/**)" is edit, patch and write on docs/**. A rule whose tool neither
/// side knows is returned as written (it matches nothing).
std::vector<std::string> troupe_rule_texts(std::string_view rule);

} // namespace troupe
