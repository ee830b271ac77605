#include "orchestrator/run_flags.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <mutex>
#include <string_view>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include "actors/http_engine.hpp"
#include "store/ids.hpp"
#include "store/session_catalog.hpp"
#include "store/session_fork.hpp"
#include "store/session_lock.hpp"
#include "context/context_window.hpp"
#include "orchestrator/claude_flags.hpp"
#include "orchestrator/agent_definitions.hpp"
#include "orchestrator/environment.hpp"
#include "orchestrator/hook_settings.hpp"
#include "orchestrator/mcp_config.hpp"
#include "orchestrator/model_flags.hpp"
#include "orchestrator/output_format.hpp"
#include "orchestrator/project_files.hpp"
#include "orchestrator/run_settings_files.hpp"
#include "tools/tool_spec.hpp"

namespace troupe {

std::string join_words(const std::vector<std::string>& words) {
  std::string text;
  for (auto& w : words)
    text += (text.empty() ? "" : " ") + w;
  return text;
}

namespace {

// Removes the directory a run that failed its checks created for its session (it holds
// nothing but the lock), unless dismissed.
class new_session_cleanup {
public:
  explicit new_session_cleanup(std::optional<session_paths> session)
    : session_(std::move(session)) {}
  new_session_cleanup(const new_session_cleanup&) = delete;
  new_session_cleanup& operator=(const new_session_cleanup&) = delete;
  ~new_session_cleanup() {
    if (!session_)
      return;
    std::error_code ec;
    std::filesystem::remove(session_->lock(), ec);
    std::filesystem::remove(session_->dir(), ec); // only when empty
  }
  void dismiss() { session_.reset(); }

private:
  std::optional<session_paths> session_;
};

// The session a run continues or starts: --resume or --continue (into a new id with --fork),
// --session-id (continued when it exists), or a new one; its transcript and state are loaded.
// Returns true when its last message was never answered: crash recovery answers it, so the
// run needs no prompt.
expected<bool> resolve_session(const run_flags& flags, run_settings& settings) {
  session_catalog catalog{settings.troupe_home};
  if (!flags.resume.empty() && flags.continue_last)
    return failure{"--resume and --continue cannot be combined (--continue picks the newest "
                   "session of the workspace)"};
  if (flags.fork && flags.resume.empty() && !flags.continue_last)
    return failure{"--fork needs --resume ID|NAME or --continue"};
  if (!flags.session_id.empty() && !is_valid_session_id(flags.session_id))
    return failure{"invalid --session-id '" + flags.session_id +
                   "': use letters, digits, '.', '_' and '-'"};
  std::optional<stored_session> from;
  if (flags.resume_given && flags.resume.empty())
    return failure{"--resume needs a session's id or name (troupe ls lists them)"};
  if (!flags.resume.empty()) {
    auto found = catalog.find(flags.resume);
    if (!found)
      return failure{"--resume: " + found.error()};
    from = *found;
  } else if (flags.continue_last) {
    auto found = catalog.newest_in(settings.cwd);
    if (!found)
      return failure{"--continue: " + found.error()};
    from = *found;
  }
  if (from && !flags.session_id.empty() && !flags.fork)
    return failure{"--session-id names the new session of a --fork; --resume already names "
                   "the session to continue"};
  if (from) {
    settings.recorded_model = from->info.model;
    // A resumed session goes on in its own workspace unless --cwd names another.
    if (flags.cwd.empty() && !from->info.cwd.empty()) {
      std::error_code cwd_ec;
      if (!std::filesystem::is_directory(from->info.cwd, cwd_ec))
        return failure{"session " + from->info.id + ": its workspace " + from->info.cwd +
                       " no longer exists; give --cwd DIR to go on elsewhere"};
      settings.cwd = from->info.cwd;
    }
    if (flags.fork) {
      settings.session_id = flags.session_id.empty() ? new_session_id() : flags.session_id;
      std::error_code exists_ec;
      if (std::filesystem::exists(catalog.session(settings.session_id).dir(), exists_ec))
        return failure{"cannot fork into " + settings.session_id + ": that session exists already"};
      settings.fork_source = from->paths.dir(); // copied once the rest of the run is checked
      settings.info.forked_from = from->info.id;
      settings.info.first_prompt = from->info.first_prompt;
      if (!from->info.name.empty()) {
        settings.info.name = from->info.name + " (fork)";
        settings.info.name_source = from->info.name_source;
      }
    } else {
      settings.session_id = from->info.id;
      settings.info = from->info;
    }
  } else {
    settings.session_id = flags.session_id.empty() ? new_session_id() : flags.session_id;
  }
  // The lock before anything is read: one process runs a session at a time, and only the one
  // that holds it may repair its transcript.
  // A session continued in place may be a fleet's task, whose directory is the fleet's.
  auto own = from && !flags.fork ? from->paths : catalog.session(settings.session_id);
  if (own.dir() != catalog.session(settings.session_id).dir())
    settings.session_dir = own.dir();
  if (auto fleet = fleet_of(own); fleet && lock_held(fleet->lock()))
    return failure{"session " + own.id() + " is a task of fleet " + fleet->id() +
                   ", which is running in another process; resume it once the fleet has ended"};
  std::error_code exists_ec;
  settings.created_session_dir = !std::filesystem::exists(own.dir(), exists_ec);
  auto locked = session_lock::take(own);
  if (!locked)
    return failure{locked.error()};
  settings.session_lock = *locked;
  std::error_code ec;
  auto source = settings.fork_source.empty() ? own : session_paths{settings.fork_source};
  if (!std::filesystem::exists(source.transcript(), ec))
    return false;
  if (!from) { // an existing --session-id keeps its name and cost so far
    auto existing = read_session(source);
    settings.info = existing.info;
    if (settings.recorded_model.empty())
      settings.recorded_model = existing.info.model;
  }
  // A fork's source may be running in another process: read, never repaired.
  auto loaded = load_session(source, settings.fork_source.empty() ? transcript_access::owner
                                                                  : transcript_access::reader);
  if (!loaded)
    return failure{loaded.error()};
  warn_of_load_problems(*loaded);
  settings.history = std::move(loaded->history);
  if (loaded->state)
    settings.resumed_state = *loaded->state;
  auto last = std::find_if(settings.history.rbegin(), settings.history.rend(),
                           [](const message& m) { return !is_bookkeeping(m); });
  return last != settings.history.rend() && awaits_answer(*last);
}

} // namespace

expected<bool> resolve_basics(const run_flags& flags, run_settings& settings) {
  settings.render.format = flags.output_format == "stream-json" ? output_format::stream_json
                           : flags.output_format == "json"      ? output_format::json
                                                                : output_format::text;
  settings.render.include_partial_messages = flags.include_partial_messages;
  settings.stream_input = flags.input_format == "stream-json";
  if (settings.stream_input && settings.render.format != output_format::stream_json)
    return failure{"--input-format stream-json needs --output-format stream-json (a client "
                   "reads JSON lines back)"};
  if (!flags.permission_prompt_tool.empty() && !settings.stream_input)
    return failure{"--permission-prompt-tool stdio needs --input-format stream-json (the client "
                   "answers on stdin)"};
  settings.ask_client = flags.permission_prompt_tool == "stdio";
  // The Agent SDK (and a client that speaks its protocol) reads Claude Code's tool names.
  auto entrypoint = env_or("CLAUDE_CODE_ENTRYPOINT");
  settings.render.claude_names = settings.stream_input || entrypoint.rfind("sdk", 0) == 0;

  if (!flags.max_turns.empty() && !flags.max_steps.empty())
    return failure{"--max-turns and --max-steps are the same cap (Claude Code's name and "
                   "troupe's): give one"};
  auto max_steps = flags.max_turns.empty()
                     ? count_setting(flags.max_steps, "--max-steps", "TROUPE_MAX_STEPS", 0, 1,
                                     1000000, "steps")
                     : parse_count(flags.max_turns, "--max-turns", 1, 1000000, "steps");
  auto parallel = count_setting("", "", "TROUPE_MAX_TOOL_CONCURRENCY", 10, 1, 10, "calls");
  auto tool_output = count_setting(flags.max_tool_output, "--max-tool-output",
                                   "TROUPE_MAX_TOOL_OUTPUT",
                                   static_cast<long>(default_output_cap), 1000, 10000000, "bytes");
  for (auto* checked : {&max_steps, &parallel, &tool_output})
    if (!*checked)
      return failure{checked->error()};
  auto max_notification = notification_cap("");
  if (!max_notification)
    return failure{max_notification.error()};
  settings.max_notification_bytes = *max_notification;
  settings.max_steps = static_cast<int32_t>(*max_steps);
  settings.max_parallel_tools = static_cast<size_t>(*parallel);
  settings.max_tool_output = static_cast<size_t>(*tool_output);

  std::error_code ec;
  settings.cwd = flags.cwd.empty() ? std::filesystem::current_path(ec)
                                   : std::filesystem::absolute(flags.cwd, ec);
  if (ec || !std::filesystem::is_directory(settings.cwd, ec))
    return failure{"--cwd " + flags.cwd + ": no such directory"};
  settings.cwd = std::filesystem::canonical(settings.cwd, ec);

  settings.home = home_dir();
  settings.shell_program = find_bash();
  settings.troupe_home = troupe_home();
  settings.libcurl = libcurl_library();
  return true;
}

expected<bool> resolve_agent(const run_flags& flags, bool interactive, run_settings& settings) {
  if (auto model = resolve_model(flags, settings); !model)
    return failure{model.error()};
  if (auto fallback = resolve_fallback_model(flags, settings); !fallback)
    return failure{fallback.error()};
  if (auto claude = resolve_claude_code_flags(flags, settings); !claude)
    return failure{claude.error()};
  auto mcp = resolve_mcp_servers(flags, settings.cwd, process_variable);
  if (!mcp)
    return failure{mcp.error()};
  for (auto& notice : mcp->notices)
    spdlog::warn("{}", notice);
  settings.mcp_servers = std::move(mcp->servers);
  if (settings.http_model)
    http_engine::warm_up(settings.libcurl, settings.http_model->provider.base_url); // loads while the rest is checked and the run starts

  auto permissions = resolve_permissions(flags, settings.cwd);
  if (!permissions)
    return failure{permissions.error()};
  auto budget = resolve_budget(flags, settings.model_name, settings.cwd);
  if (!budget)
    return failure{budget.error()};
  settings.budget = *budget;
  auto hooks = resolve_hooks(flags, settings.cwd);
  if (!hooks)
    return failure{hooks.error()};
  settings.hook_commands = std::move(*hooks);
  auto instructions = resolve_project_instructions(flags, settings.cwd);
  if (!instructions)
    return failure{instructions.error()};
  settings.read_instructions = !flags.bare && *instructions;
  settings.read_agent_types = !flags.bare;
  if (auto files = load_project_files(settings); !files)
    return failure{files.error()};
  settings.resolve_budget = [flags, cwd = settings.cwd](const std::string& model) {
    return resolve_budget(flags, model, cwd);
  };
  auto depth = count_setting(flags.max_agent_depth, "--max-agent-depth", "TROUPE_MAX_AGENT_DEPTH",
                             default_agent_depth, 0, 10, "levels");
  auto agents = count_setting(flags.max_agents, "--max-agents", "TROUPE_MAX_AGENTS",
                              static_cast<long>(default_max_agents), 1,
                              static_cast<long>(max_agents_cap), "agents");
  for (auto* checked : {&depth, &agents})
    if (!*checked)
      return failure{checked->error()};
  settings.max_agent_depth = static_cast<int32_t>(*depth);
  settings.max_agents = static_cast<size_t>(*agents);
  settings.let_agents_finish = flags.let_agents_finish;
  settings.wait_notifications = flags.wait_notifications;
  if (flags.wait_notifications || interactive)
    settings.idle_timeout = std::chrono::seconds{flags.idle_timeout_s};
  // "bypass" means no questions, not no walls: a headless run or a fleet that asks nothing is
  // sandboxed unless told otherwise.
  auto sandbox = resolve_sandbox(flags, settings.cwd,
                                 !interactive && permissions->mode == permission_mode::bypass);
  if (!sandbox)
    return failure{sandbox.error()};
  settings.sandbox = std::move(*sandbox);
  settings.permissions = std::move(*permissions);
  // dont-ask refuses what would be asked (the step does, whoever could answer): nobody is.
  settings.ask_on_terminal = isatty(STDIN_FILENO) != 0 && isatty(STDERR_FILENO) != 0 &&
                             settings.permissions.mode != permission_mode::dont_ask;
  return true;
}

expected<bool> load_project_files(run_settings& settings) {
  auto user_dir = config_home() / "troupe";
  settings.instructions.reset();
  settings.subagent_types.reset();
  if (settings.read_instructions) {
    auto read = read_project_instructions(settings.cwd, user_dir, settings.home);
    for (auto& warning : read.warnings)
      spdlog::warn("project instructions: {}", warning);
    settings.instructions = std::make_shared<const project_instructions>(std::move(read));
  }
  if (settings.read_agent_types) {
    auto types = read_agent_types(settings.cwd, user_dir, settings.home);
    if (!types)
      return failure{"custom subagents: " + types.error()};
    settings.subagent_types = std::make_shared<const agent_types>(std::move(*types));
  }
  return true;
}

namespace {

// The model resolve_agent will pick is an API's as far as its name says (an explicit --model,
// TROUPE_MODEL, or a provider's key alone); a resumed session's recorded model may say
// otherwise, which only makes the early load below unneeded.
// The base URL of the run's model when its name already says it is an API's (before the
// session, whose recorded model a resume may take, is read).
std::optional<std::string> named_api_url(const run_flags& flags) {
  auto spec = !flags.model.empty() ? flags.model : env_or("TROUPE_MODEL");
  if (spec.empty())
    spec = !env_or("ANTHROPIC_API_KEY").empty() ? "anthropic/m"
           : !env_or("OPENAI_API_KEY").empty()  ? "openai/m"
                                                : "";
  return api_base_url(spec);
}

} // namespace

expected<run_settings> resolve_run(const run_flags& flags, bool interactive) {
  // libcurl (about 30 libraries and OpenSSL's set-up, ~8 ms) loads on a helper thread from the
  // first moment, beside everything below, when the model is an API's by its name and its
  // requests need libcurl; otherwise resolve_agent starts it once the model is known.
  if (auto url = named_api_url(flags))
    http_engine::warm_up(libcurl_library(), *url);
  run_settings settings;
  if (auto basics = resolve_basics(flags, settings); !basics)
    return failure{basics.error()};
  settings.interactive = interactive;
  auto resumed = resolve_session(flags, settings);
  // Bad input found from here on leaves no directory behind for a session it would have made.
  new_session_cleanup leave_no_trace{
    settings.created_session_dir
      ? std::optional{session_paths::top_level(settings.troupe_home, settings.session_id)}
      : std::nullopt};
  if (!resumed)
    return failure{resumed.error()};
  if (auto agent = resolve_agent(flags, interactive, settings); !agent)
    return failure{agent.error()};

  // A chat asks for its input; a run needs a prompt, unless it resumes a session whose last
  // message was never answered (crash recovery answers it).
  // A stream-json client's prompts come on stdin as it sends them, never read ahead.
  settings.prompt = interactive || settings.stream_input ? join_words(flags.prompt)
                                                         : read_prompt(flags.prompt);
  if (settings.prompt.empty() && !interactive && !settings.stream_input && !*resumed)
    return failure{settings.history.empty()
                     ? "no prompt: give it as arguments (troupe run \"fix the tests\") or on stdin"
                     : "no prompt: session " + settings.session_id +
                         " has nothing left to answer; give the next prompt as arguments or "
                         "on stdin"};
  // Last, once everything else is known to be usable, so that bad input leaves nothing
  // behind: the fork's copy.
  if (!settings.fork_source.empty()) {
    auto forked = fork_session(read_session(session_paths{settings.fork_source}),
                               session_paths::top_level(settings.troupe_home, settings.session_id));
    if (!forked)
      return failure{forked.error()};
    // The copy's own paths (full tool outputs) from here on, not the original's.
    auto copied = load_transcript(forked->transcript(), transcript_access::reader);
    if (!copied)
      return failure{copied.error()};
    settings.history = std::move(copied->messages);
  }
  leave_no_trace.dismiss();
  return settings;
}

std::string read_prompt(const std::vector<std::string>& words) {
  auto prompt = join_words(words);
  if (!prompt.empty() || isatty(STDIN_FILENO))
    return prompt;
  prompt.assign(std::istreambuf_iterator<char>{std::cin}, std::istreambuf_iterator<char>{});
  while (!prompt.empty() && (prompt.back() == '\n' || prompt.back() == '\r'))
    prompt.pop_back();
  return prompt;
}

static const std::vector<std::string> log_levels = {"trace", "debug", "info", "warn",
                                              "error", "critical", "off"};

namespace {

// Log lines quote what models, providers, tools and hooks said: on the terminal they are shown
// in printable form, as everything else is.
class printable_stderr_sink final : public spdlog::sinks::base_sink<std::mutex> {
protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    auto text = printable(std::string_view{formatted.data(), formatted.size()});
    std::fwrite(text.data(), 1, text.size(), stderr);
  }
  void flush_() override { std::fflush(stderr); }
};

} // namespace

expected<bool> configure_logging(const std::string& log_file, const std::string& level) {
  auto name = level.empty() ? std::string{"warn"} : level;
  if (std::find(log_levels.begin(), log_levels.end(), name) == log_levels.end())
    return failure{"invalid log level '" + name + "': use trace, debug, info, warn, error, "
                   "critical or off"};
  std::shared_ptr<spdlog::logger> logger;
  try {
    logger = log_file.empty()
               ? std::make_shared<spdlog::logger>("troupe",
                                                  std::make_shared<printable_stderr_sink>())
               : spdlog::basic_logger_mt("troupe", log_file);
  } catch (const spdlog::spdlog_ex& e) {
    return failure{"cannot open log file " + log_file + ": " + e.what()};
  }
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(name));
  return true;
}

void add_repeated_option(CLI::App& command, const std::string& name,
                         std::vector<std::string>& into, const std::string& description,
                         const std::string& value_name) {
  command.add_option(name, into, description)
    ->type_name(value_name)
    ->expected(1)
    ->allow_extra_args(false)
    ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

void add_bare_flag(CLI::App& command, run_flags& flags) {
  command.add_flag("--bare", flags.bare,
                   "read no project files: no CLAUDE.md or AGENTS.md instructions, no custom "
                   "subagents from .claude/agents (settings files still apply)");
}

void add_sandbox_flags(CLI::App& command, run_flags& flags) {
  command.add_option("--sandbox", flags.sandbox,
                     "walls for tool processes and file tools: read-only, workspace-write or off "
                     "(default: workspace-write for headless runs and fleets in bypass mode, "
                     "else off)")
    ->type_name("MODE");
  command.add_flag("--sandbox-network", flags.sandbox_network,
                   "let sandboxed tool processes use the network");
  add_repeated_option(command, "--add-dir", flags.add_dirs,
                      "another directory the sandbox lets tools write (repeatable)", "DIR");
}

void add_agent_flags(CLI::App& command, run_flags& flags, bool headless) {
  command.add_option("prompt", flags.prompt,
                     headless ? "the task (read from stdin when omitted)"
                              : "a first message, sent before the prompt appears");
  command.add_option("--model,-m", flags.model,
                  "openai/MODEL, anthropic/MODEL, ollama/MODEL or scripted:PATH "
                  "(default: $TROUPE_MODEL)");
  command.add_option("--max-steps", flags.max_steps,
                  "most steps per turn (default: $TROUPE_MAX_STEPS, else no cap)");
  command.add_option("--cwd", flags.cwd, "workspace directory (default: the current one)");
  if (headless) {
    command
      .add_option("--output-format", flags.output_format,
                  "text, json (the result line alone, at the end) or stream-json")
      ->check(CLI::IsMember({"text", "json", "stream-json"}));
    command
      .add_option("--input-format", flags.input_format,
                  "text (the prompt from the arguments or stdin) or stream-json (stdin is read "
                  "as it arrives: one user message or control request per line)")
      ->check(CLI::IsMember({"text", "stream-json"}));
    command.add_flag("--verbose", flags.verbose,
                     "accepted for Claude Code's sake: stream-json output is always complete");
    command
      .add_option("--permission-prompt-tool", flags.permission_prompt_tool,
                  "stdio: ask the stream-json client about calls that need permission (a "
                  "can_use_tool control request)")
      ->check(CLI::IsMember({"stdio"}));
  }
  command.add_option("--session-id", flags.session_id,
                  "session id; an existing session's transcript is continued");
  command.add_option("--tool-format", flags.tool_format,
                  "tool (native function calling; default for API models), markdown "
                  "(fenced blocks; default for scripted) or xml (<tool-use> elements)")
    ->check(CLI::IsMember({"tool", "markdown", "xml"}));
  command.add_flag("--no-stream", flags.no_stream, "ask the API for whole replies, not streams");
  if (headless)
    command.add_flag("--include-partial-messages", flags.include_partial_messages,
                     "stream-json: add stream_event lines with text deltas");
  command.add_option("--max-retries", flags.max_retries,
                  "retries of a failed API request (429, 5xx, connection errors)")
    ->check(CLI::Range(0, 100));
  command.add_option("--idle-timeout", flags.idle_timeout_s,
                  "with --wait-notifications: end the run (completed) after this many seconds "
                  "without any; in chat: end after this long without a key or any output; "
                  "otherwise the same as --stream-idle-timeout")
    ->check(CLI::Range(1, 86400));
  command.add_option("--stream-idle-timeout", flags.stream_idle_timeout_s,
                  "seconds a model reply (streamed or not) may stay silent before it fails "
                  "(default 120)")
    ->check(CLI::Range(1, 86400));
  command.add_option("--request-timeout", flags.request_timeout_s,
                  "seconds a model reply may take in all before it fails (default 600)")
    ->check(CLI::Range(1, 86400));
  command.add_option("--min-transfer-rate", flags.min_transfer_rate,
                  "bytes/s a model reply must average over each --stream-idle-timeout stretch "
                  "after its first byte (default 32; 0: no check)")
    ->type_name("BYTES")
    ->check(CLI::Range(0, 1 << 30));
  command.add_option("--max-reply-bytes", flags.max_reply_bytes,
                  "most bytes of one model reply as received (default 67108864, 64 MiB)")
    ->type_name("BYTES")
    ->check(CLI::Range(int64_t{1024}, int64_t{1} << 40));
  command.add_option("--max-event-bytes", flags.max_event_bytes,
                  "most bytes of one server-sent event of a streamed reply (default 8388608, "
                  "8 MiB)")
    ->type_name("BYTES")
    ->check(CLI::Range(int64_t{1024}, int64_t{1} << 40));
  command.add_flag("--wait-notifications", flags.wait_notifications,
                "when the work is done, stay alive for task notifications (troupe notify) "
                "instead of ending");
  command.add_option("--max-agent-depth", flags.max_agent_depth,
                  "deepest nesting of subagents (default 3)")
    ->type_name("N");
  command.add_option("--max-agents", flags.max_agents,
                  "most subagents one agent runs at once (default 20)")
    ->type_name("N");
  command.add_flag("--let-agents-finish", flags.let_agents_finish,
                "when the run ends, let background subagents finish instead of stopping them");
  command.add_option("--max-tool-output", flags.max_tool_output,
                  "bytes of a tool result the model sees; longer ones keep head and tail, "
                  "the whole output saved in the session directory")
    ->type_name("BYTES");
  command.add_option("--permission-mode", flags.permission_mode,
                  "default (ask for shell and writes), accept-edits, plan (read-only tools), "
                  "bypass (everything), dont-ask (refuse what would be asked); also Claude "
                  "Code's acceptEdits, bypassPermissions, dontAsk")
    ->type_name("MODE");
  // One rule per flag, repeatable, so `--allow shell PROMPT` leaves PROMPT the prompt.
  add_repeated_option(command, "--allow", flags.allow,
                      "allow a tool or Tool(pattern), e.g. 'shell(git *)'", "RULE");
  add_repeated_option(command, "--deny", flags.deny,
                      "deny a tool or Tool(pattern); a bare tool is removed", "RULE");
  command
    .add_option("--settings", flags.settings_file,
                "a settings JSON file, or a JSON object, read after the others")
    ->type_name("FILE|JSON");
  add_sandbox_flags(command, flags);
  command.add_option("--context-window", flags.context_window,
                  "the model's context window in tokens (default: the built-in table, "
                  "$TROUPE_CONTEXT_WINDOW or contextWindow in settings); the conversation is "
                  "compacted before a request would overflow it")
    ->type_name("TOKENS");
  command.add_option("--max-output-tokens", flags.max_output_tokens,
                  "tokens a reply may take (default: the built-in table, "
                  "$TROUPE_MAX_OUTPUT_TOKENS or maxOutputTokens in settings)")
    ->type_name("TOKENS");
  command
    .add_option("--resume,-r", flags.resume,
                "continue the session with this id or name (troupe ls lists them)")
    ->type_name("ID|NAME")
    ->each([&flags](const std::string&) { flags.resume_given = true; });
  command.add_flag("--continue,-c", flags.continue_last,
                   "continue the newest session of the workspace");
  command.add_flag("--fork,--fork-session", flags.fork,
                   "with --resume or --continue: continue a copy of the session under a new "
                   "id, leaving the original as it is");
  add_claude_code_flags(command, flags, headless);
  add_bare_flag(command, flags);
}

} // namespace troupe
