#pragma once
// Claude Code's command line, spelled for troupe: `troupe -p PROMPT` and a bare `troupe PROMPT`
// are `troupe run`, Claude Code's list flags take several words (`--allowedTools A B`), and the
// Claude Code flags troupe cannot honour are set aside (ignored, or refused) before CLI11 parses
// what is left. Also the values of Claude Code's flags that are more than one word of troupe's:
// tool lists, setting sources, JSON given inline or in a file, MCP configurations.

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/expected.hpp"

namespace CLI {
class App;
}

namespace troupe {

struct run_flags;
struct run_settings;

/// Splits a Claude Code tool list as Claude Code does: entries are separated by commas or
/// blanks, except inside parentheses, which belong to the entry's pattern. "Bash(git *) Edit"
/// and "Bash(git *),Edit" are both {"Bash(git *)", "Edit"}; empty entries are dropped.
std::vector<std::string> split_tool_list(std::string_view text);

/// troupe's own command line for a command line in either spelling.
struct rewritten_argv {
  /// The arguments (without the program's name), a subcommand among them.
  std::vector<std::string> args;
  /// The Claude Code flags accepted and ignored, each once, in the order first given.
  std::vector<std::string> ignored;
  /// The command line named no subcommand (`troupe PROMPT`, `troupe -p …`): Claude Code's
  /// form, whose exit status is Claude Code's.
  bool claude_form = false;
};

/// True when `option` (e.g. "--model", "-m") of `subcommand` takes a value.
using option_takes_value =
  std::function<bool(const std::string& subcommand, const std::string& option)>;

/// Rewrites a command line (argv without the program's name) into troupe's: a first word that
/// is none of `subcommands` (nor --help, -h, --version, -v) makes it `run`; no words at all make
/// it `chat` when stdin is a terminal, else `run` (which reads the prompt from stdin). In `run`
/// and `chat`, Claude Code's list flags (--allowedTools, --disallowedTools, --tools,
/// --mcp-config) take every following word up to the next one that starts with '-' (one with
/// `--flag=value`), each becoming `--flag=WORD` of troupe's spelling; the flags troupe ignores
/// are removed with their values and named in `ignored`; a flag whose meaning would be lost
/// (--json-schema, --resume-session-at, …) is an error. Nothing after `--` is touched.
expected<rewritten_argv> rewrite_claude_argv(const std::vector<std::string>& args,
                                             const std::vector<std::string>& subcommands,
                                             bool stdin_is_terminal,
                                             const option_takes_value& takes_value);

/// Which settings files `--setting-sources` reads.
struct setting_sources {
  bool user = true;    ///< troupe's config directory: settings.json
  bool project = true; ///< .troupe/settings.json and .claude/settings.json
  bool local = true;   ///< .troupe/settings.local.json and .claude/settings.local.json
};

/// Parses `--setting-sources`: user, project and local, separated by commas (blanks around them
/// are fine; an empty text names none).
expected<setting_sources> parse_setting_sources(std::string_view text);

/// True for a flag value that is JSON given inline: its first non-blank character is '{'.
bool is_inline_json(std::string_view value);

/// A JSON object given inline or as a file's path (`flag` names it in errors): not JSON, not an
/// object, or a file that cannot be read is an error.
expected<nlohmann::json> json_object_argument(const std::string& value, const std::string& flag);

/// The MCP servers of `--mcp-config` values, merged ({"mcpServers": {NAME: {…}, …}}; a later
/// value's server replaces an earlier one of the same name). Each value is JSON inline or a
/// file, an object whose "mcpServers" is an object of objects.
expected<nlohmann::json> merge_mcp_configs(const std::vector<std::string>& values);

/// The troupe tools `--tools` leaves offered: "default" is all of `builtin`, "" none, else the
/// tools named (Claude Code's names or troupe's; Claude Code's "Edit" is edit, patch and write).
/// A name no tool has is an error.
expected<std::vector<std::string>> offered_tool_names(const std::vector<std::string>& values,
                                                      const std::vector<std::string>& builtin);

/// Adds the flags of Claude Code's spelling that troupe honours to `run` (`headless`: -p, the
/// fallback model, the budget, persistence, --await-initialize) or `chat`: --max-turns, the tool
/// lists, the system prompt, --dangerously-skip-permissions, --setting-sources, --mcp-config.
void add_claude_code_flags(CLI::App& command, run_flags& flags, bool headless);

/// What those flags decide once the session and the model are known: the system prompt's
/// instructions (replaced, appended), the cost cap (whose models must have a known price),
/// whether the session is kept (only a new one can go unkept), the MCP configuration.
expected<bool> resolve_claude_code_flags(const run_flags& flags, run_settings& settings);

} // namespace troupe
