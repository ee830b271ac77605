#include "orchestrator/cli.hpp"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "orchestrator/chat_command.hpp"
#include "orchestrator/claude_flags.hpp"
#include "orchestrator/demo_command.hpp"
#include "orchestrator/environment.hpp"
#include "orchestrator/fleet_command.hpp"
#include "orchestrator/line_editor.hpp"
#include "orchestrator/remote_commands.hpp"
#include "orchestrator/run_command.hpp"
#include "orchestrator/run_flags.hpp"
#include "orchestrator/mcp_command.hpp"
#include "orchestrator/sandbox_command.hpp"
#include "orchestrator/sessions_command.hpp"

namespace troupe {

namespace {

// Says once, before the run starts, which Claude Code flags changed nothing.
void report_ignored(const std::vector<std::string>& ignored) {
  if (ignored.empty())
    return;
  std::string names;
  for (auto& name : ignored)
    names += (names.empty() ? "" : ", ") + name;
  std::fprintf(stderr, "troupe: ignored (Claude Code options troupe has no counterpart for): %s\n",
               names.c_str());
}

} // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{"troupe: an asynchronous multi-agent runtime for LLM coding agents (troupe "
               "PROMPT and troupe -p PROMPT are troupe run; troupe alone is troupe chat on a "
               "terminal)",
               "troupe"};
  app.require_subcommand(1);
  app.fallthrough(); // --log-file/--log-level may also follow the subcommand
  app.set_version_flag("--version,-v", std::string{"troupe "} + troupe_version + " (commit " +
                                         std::string{source_commit()} + ")");
  std::string log_file;
  std::string log_level = env_or("TROUPE_LOG");
  app.add_option("--log-file", log_file, "write diagnostics to this file instead of stderr");
  app.add_option("--log-level", log_level, "trace, debug, info, warn (default), error, off");

  run_flags flags;
  auto* run = app.add_subcommand("run", "run an agent non-interactively until it is done");

  std::string target_id;
  std::vector<std::string> notify_words;
  bool urgent = false;
  auto* notify = app.add_subcommand(
    "notify", "send a task notification to a session (queued durably; a running session "
              "gets it at once)");
  notify->add_option("session", target_id, "the session's id or name")->required();
  notify->add_option("text", notify_words, "the message (read from stdin when omitted)");
  notify->add_flag("--urgent", urgent, "interrupt the current step and start a turn with it");
  std::string notify_max_bytes;
  notify->add_option("--max-bytes", notify_max_bytes,
                     "refuse a message longer than this many bytes (default 1048576, or "
                     "TROUPE_MAX_NOTIFICATION_BYTES)");
  auto* interrupt = app.add_subcommand("interrupt", "interrupt the step a running session is in");
  interrupt->add_option("session", target_id, "the session's id or name, or a subagent's id")
    ->required();
  auto* background = app.add_subcommand(
    "background", "move a foreground subagent to the background (its parent goes on)");
  background->add_option("agent-id", target_id, "the subagent")->required();

  run_flags chat_flags;
  auto* chat = app.add_subcommand(
    "chat", "talk with an agent in the terminal (line editing, history, slash commands)");
  // An agent's ~60 flags are built for a subcommand only once the words name it: building
  // both sets took about a tenth of every start (`troupe run` never parses chat's).
  bool run_flags_built = false;
  bool chat_flags_built = false;
  auto build_agent_flags = [&](const std::string& subcommand) {
    if (subcommand == "run" && !std::exchange(run_flags_built, true))
      add_agent_flags(*run, flags, true);
    if (subcommand == "chat" && !std::exchange(chat_flags_built, true))
      add_agent_flags(*chat, chat_flags, false);
  };

  bool ls_json = false;
  bool ls_all = false;
  auto* ls = app.add_subcommand("ls", "list the sessions, the most recently active first");
  ls->add_flag("--json", ls_json, "one JSON object per session and line");
  ls->add_flag("--all,-a", ls_all, "each session's subagents below it, as a tree");
  auto* show = app.add_subcommand("show", "print a session's (or a subagent's) transcript");
  show->add_option("session", target_id, "the session's id or name, or a subagent's id")
    ->required();
  auto* rm = app.add_subcommand("rm", "remove a session that is not running");
  rm->add_option("session", target_id, "the session's id or name")->required();

  fleet_flags fleet_options;
  auto fleet = add_fleet_command(app, fleet_options);

  sandbox_flags sandbox_options;
  auto* sandbox = add_sandbox_command(app, sandbox_options);

  mcp_flags mcp_options;
  auto mcp = add_mcp_command(app, mcp_options);

  std::string demo_format = "text";
  bool demo_keep = false;
  auto* demo = app.add_subcommand("demo", "run an offline agent on a bundled script");
  demo->add_option("--output-format", demo_format, "text or stream-json")
    ->check(CLI::IsMember({"text", "stream-json"}));
  demo->add_flag("--keep", demo_keep,
                 "keep the demo's temporary directory (its workspace and session) and say where");

  // Claude Code's spelling becomes troupe's: `troupe -p PROMPT` and `troupe PROMPT` are
  // `troupe run`, list flags take several words, ignored flags go (reported before the run).
  std::vector<std::string> subcommands;
  for (auto* command : app.get_subcommands([](CLI::App*) { return true; }))
    subcommands.push_back(command->get_name());
  auto takes_value = [&](const std::string& subcommand, const std::string& option) {
    build_agent_flags(subcommand);
    const CLI::Option* found = nullptr;
    for (auto* command :
         app.get_subcommands([&](CLI::App* c) { return c->get_name() == subcommand; }))
      found = command->get_option_no_throw(option);
    if (!found)
      found = app.get_option_no_throw(option);
    return found != nullptr && found->get_expected_max() > 0; // a flag expects none
  };
  auto rewritten = rewrite_claude_argv(std::vector<std::string>(argv + 1, argv + argc), subcommands,
                                       isatty(STDIN_FILENO) != 0, takes_value);
  if (!rewritten)
    return fail(rewritten.error());
  for (auto& word : rewritten->args)
    build_agent_flags(word);
  try {
    // CLI11 takes the words last first.
    std::vector<std::string> reversed(rewritten->args.rbegin(), rewritten->args.rend());
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(std::string{e.what()} + " (see troupe --help)");
  }
  if (!flags.wait_notifications && flags.idle_timeout_s > 0)
    flags.stream_idle_timeout_s = flags.idle_timeout_s;
  if (auto logging = configure_logging(log_file, log_level); !logging)
    return fail(logging.error());
  if (auto client = check_http_client_choice(); !client)
    return fail(client.error());
  // A reader that goes away (`troupe run … | head`) is an EPIPE to handle, not a fatal signal.
  std::signal(SIGPIPE, SIG_IGN);
  // A file-size limit (ulimit -f) makes a write fail with EFBIG, which every writer handles
  // (an append is taken back); the default action would kill troupe mid-write instead.
  std::signal(SIGXFSZ, SIG_IGN);

  if (*demo)
    return run_demo(demo_format, demo_keep);
  if (*sandbox)
    return run_sandbox(sandbox_options);
  if (*mcp.mcp)
    return run_mcp(mcp_options, mcp.get->parsed());
  if (*fleet.status)
    return run_fleet_status(fleet_options);
  if (*fleet.fleet)
    return run_fleet(fleet_options);
  if (*ls)
    return run_ls(ls_json, ls_all);
  if (*show)
    return run_show(target_id);
  if (*rm)
    return run_rm(target_id);
  if (*chat) {
    // On a terminal the chat edits lines with libedit, which it opens itself: checked before
    // anything is written, a missing one is a one-line error, never a chat that cannot ask.
    if (::isatty(STDIN_FILENO) != 0 && ::isatty(STDOUT_FILENO) != 0)
      if (auto editor = line_editor::load(); !editor)
        return fail(editor.error() + ": troupe chat needs it on a terminal (Debian: apt-get "
                                     "install libedit2; or point TROUPE_LIBEDIT at it); troupe "
                                     "run works without it");
    auto settings = resolve_run(chat_flags, true);
    if (!settings)
      return fail(settings.error());
    report_ignored(rewritten->ignored);
    return execute_chat(std::move(*settings));
  }
  if (*notify) {
    // Checked before anything is read or written: an oversized message costs nothing.
    auto cap = notification_cap(notify_max_bytes);
    if (!cap)
      return fail(cap.error());
    auto text = read_notification_text(notify_words, *cap);
    if (!text)
      return fail(text.error());
    if (text->empty())
      return fail("no message: give it as arguments or on stdin");
    auto sent = notify_session(troupe_home(), target_id, *text, urgent);
    if (!sent)
      return fail_at_runtime(sent.error());
    std::printf("%s\n", sent->c_str());
    return 0;
  }
  if (*interrupt)
    return run_interrupt(target_id);
  if (*background)
    return run_background(target_id);
  auto settings = resolve_run(flags, false);
  if (!settings)
    return fail(settings.error());
  report_ignored(rewritten->ignored);
  // Claude Code's spelling (`troupe -p`, a bare prompt) exits as Claude Code does: 1 for every
  // error result; `troupe run` keeps troupe's codes per terminal state.
  settings->claude_exit_codes = rewritten->claude_form || flags.print;
  // `claude -p` prints the answer alone; `troupe run` shows the session as it goes.
  settings->render.answer_only =
    settings->claude_exit_codes && settings->render.format == output_format::text;
  return execute_run(std::move(*settings), stdout);
}

} // namespace troupe
