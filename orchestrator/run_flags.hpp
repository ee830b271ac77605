#pragma once
// The flags `troupe run` and `troupe chat` share, and how flags, environment and settings files
// become a checked run.

#include <cstdint>
#include <string>
#include <vector>

#include "orchestrator/run_command.hpp"
#include "protocol/expected.hpp"

namespace CLI {
class App;
}

namespace troupe {

/// The flags of `troupe run` and `troupe chat`, as typed.
struct run_flags {
  std::vector<std::string> prompt;
  std::string model;
  std::string max_steps;
  std::string cwd;
  std::string output_format = "text";
  /// --input-format: text (the prompt from arguments or stdin) or stream-json (stdin is a live
  /// queue of JSON lines: user messages and control requests).
  std::string input_format = "text";
  /// --verbose: accepted (stream-json output is always complete).
  bool verbose = false;
  /// --permission-prompt-tool: "stdio" asks the stream-json client (a can_use_tool request).
  std::string permission_prompt_tool;
  std::string session_id;
  std::string tool_format;
  bool no_stream = false;
  bool include_partial_messages = false;
  int max_retries = 8;
  int stream_idle_timeout_s = 120;
  int request_timeout_s = 600;
  int min_transfer_rate = 32;
  int64_t max_reply_bytes = int64_t{64} << 20;
  int64_t max_event_bytes = int64_t{8} << 20;
  /// --idle-timeout as typed: the session's idle timeout with --wait-notifications, else the
  /// streaming one (its meaning before notifications existed).
  int idle_timeout_s = 0;
  bool wait_notifications = false;
  std::string max_agent_depth;
  std::string max_agents;
  bool let_agents_finish = false;
  std::string max_tool_output;
  std::string permission_mode;
  std::vector<std::string> allow;
  std::vector<std::string> deny;
  std::string settings_file;
  /// --sandbox MODE, --sandbox-network, --add-dir DIR (repeatable), as typed.
  std::string sandbox;
  bool sandbox_network = false;
  std::vector<std::string> add_dirs;
  std::string context_window;
  std::string max_output_tokens;
  /// --resume ID|NAME, --continue (the newest session in the workspace), --fork (into a new id).
  std::string resume;
  bool resume_given = false;
  bool continue_last = false;
  bool fork = false;

  // Claude Code's spelling (see claude_flags.hpp and README "Claude Code compatibility").
  /// -p/--print: a headless run (troupe run), the prompt the positional words or stdin.
  bool print = false;
  /// --max-turns: Claude Code's name for --max-steps.
  std::string max_turns;
  /// --allowed-tools/--allowedTools and --disallowed-tools/--disallowedTools, one list per use
  /// (split by split_tool_list): allow and deny rules.
  std::vector<std::string> allowed_tools;
  std::vector<std::string> disallowed_tools;
  /// --tools: the built-in tools offered ("default", "" for none, or a list).
  std::vector<std::string> tools;
  bool tools_given = false;
  /// --system-prompt[-file] replaces troupe's own instructions; --append-system-prompt[-file]
  /// adds after them (the main agent only).
  std::string system_prompt;
  bool system_prompt_given = false;
  std::string system_prompt_file;
  std::string append_system_prompt;
  std::string append_system_prompt_file;
  /// --dangerously-skip-permissions: bypass; --allow-dangerously-skip-permissions: accepted.
  bool skip_permissions = false;
  bool allow_skip_permissions = false;
  /// --fallback-model: the model a step switches to when the main one is overloaded.
  std::string fallback_model;
  /// --setting-sources as typed; given or not.
  std::string setting_sources;
  bool setting_sources_given = false;
  /// --no-session-persistence: the session's directory goes when the run ends.
  bool no_session_persistence = false;
  /// --max-budget-usd: the run ends once its cost reaches this many US dollars.
  std::string max_budget_usd;
  /// --mcp-config (file or JSON, repeatable) and --strict-mcp-config: kept for the session.
  std::vector<std::string> mcp_configs;
  bool strict_mcp_config = false;
  /// --await-initialize: the stream-json client sends an initialize request first.
  bool await_initialize = false;
  /// --bare: no project files are read (instructions, custom subagents), as Claude Code's
  /// minimal mode.
  bool bare = false;
};

/// Adds a flag given once per value (`--allow A --allow B`), never taking the next word as a
/// second value: `--allow shell PROMPT` leaves PROMPT the prompt.
void add_repeated_option(CLI::App& command, const std::string& name,
                         std::vector<std::string>& into, const std::string& description,
                         const std::string& value_name);

/// Adds --bare (run, chat, fleet).
void add_bare_flag(CLI::App& command, run_flags& flags);

/// Adds --sandbox, --sandbox-network and --add-dir (run, chat, fleet, sandbox).
void add_sandbox_flags(CLI::App& command, run_flags& flags);

/// Adds the flags `troupe run` and `troupe chat` share to a subcommand; `headless` (run) adds
/// the output format's.
void add_agent_flags(CLI::App& command, run_flags& flags, bool headless);

/// Sets up diagnostics: spdlog at `level` (default warn) on stderr or in `log_file`.
expected<bool> configure_logging(const std::string& log_file, const std::string& level);

/// Joins words with single spaces.
std::string join_words(const std::vector<std::string>& words);

/// Joins the words of a prompt; with none, reads stdin when it is not a terminal.
std::string read_prompt(const std::vector<std::string>& words);

/// The first half of resolve_run, which knows no session: caps, the workspace (--cwd), the home
/// directories, bash and libcurl.
expected<bool> resolve_basics(const run_flags& flags, run_settings& settings);

/// The second half, once the session (and so its workspace and recorded model) is known: the
/// model, permissions, context budget, hooks and subagent caps.
expected<bool> resolve_agent(const run_flags& flags, bool interactive, run_settings& settings);

/// Reads the project files of `settings.cwd` that the settings ask for: its instructions
/// (read_instructions; what cannot be read is logged as a warning) and its custom subagent
/// types (read_agent_types; a bad definition is an error).
expected<bool> load_project_files(run_settings& settings);

/// Turns flags, environment and settings files into a checked run, or a one-line error.
/// `interactive` (chat): a prompt is optional and the session waits for input.
expected<run_settings> resolve_run(const run_flags& flags, bool interactive);

} // namespace troupe
