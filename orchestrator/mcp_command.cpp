#include "orchestrator/mcp_command.hpp"

#include <algorithm>
#include <cstdio>
#include <system_error>

#include <CLI/CLI.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include "actors/runtime.hpp"
#include "orchestrator/claude_flags.hpp"
#include "orchestrator/environment.hpp"
#include "orchestrator/mcp_config.hpp"
#include "orchestrator/mcp_connections.hpp"
#include "orchestrator/signals.hpp"
#include "tools/process_reaper.hpp"

namespace troupe {

namespace {

void add_source_flags(CLI::App& command, run_flags& flags) {
  add_repeated_option(command, "--mcp-config", flags.mcp_configs,
                      "MCP servers ({\"mcpServers\": {…}}), a file or JSON (repeatable)",
                      "FILE|JSON");
  command.add_flag("--strict-mcp-config", flags.strict_mcp_config,
                   "only --mcp-config's servers, none from settings or .mcp.json");
  command.add_option("--settings", flags.settings_file, "a settings file or JSON object");
  command.add_option("--cwd", flags.cwd, "the workspace (default: the current directory)");
}

} // namespace

mcp_commands add_mcp_command(CLI::App& app, mcp_flags& flags) {
  mcp_commands commands;
  commands.mcp = app.add_subcommand(
    "mcp", "the MCP servers a run here would start: each started and asked for its tools");
  commands.mcp->require_subcommand(1);
  commands.list = commands.mcp->add_subcommand("list", "every configured server, its state and "
                                                       "its tools");
  add_source_flags(*commands.list, flags.sources);
  commands.get = commands.mcp->add_subcommand("get", "one server, its state and its tools");
  commands.get->add_option("name", flags.name, "the server's name in mcpServers")->required();
  add_source_flags(*commands.get, flags.sources);
  return commands;
}

int run_mcp(const mcp_flags& flags, bool get) {
  std::error_code ec;
  auto workspace = flags.sources.cwd.empty() ? std::filesystem::current_path(ec)
                                             : std::filesystem::absolute(flags.sources.cwd, ec);
  if (ec || !std::filesystem::is_directory(workspace))
    return fail("no such workspace directory: " + flags.sources.cwd);
  auto configured = resolve_mcp_servers(flags.sources, workspace, process_variable);
  if (!configured)
    return fail(configured.error());
  for (auto& notice : configured->notices)
    std::fprintf(stderr, "troupe: %s\n", notice.c_str());
  auto servers = std::move(configured->servers);
  if (get) {
    auto found = std::find_if(servers.begin(), servers.end(),
                              [&](const mcp_server_config& s) { return s.name == flags.name; });
    if (found == servers.end()) {
      std::string names;
      for (auto& server : servers)
        names += (names.empty() ? "" : ", ") + server.name;
      return fail("no MCP server named '" + flags.name + "' (configured: " +
                  (names.empty() ? "none" : names) + ")");
    }
    servers = {*found};
  }
  if (servers.empty()) {
    std::fputs(describe_mcp_servers({}, {}, true).c_str(), stdout);
    return 0;
  }
  // A signal is taken, not obeyed: the wait ends, what is known is printed, and the servers'
  // processes, and what they leave, go with the listing.
  block_termination_signals();
  process_reaper reaper;
  caf::actor_system_config cfg;
  configure_actor_system(cfg);
  caf::actor_system sys{cfg};
  mcp_start_options options;
  options.workspace = workspace;
  options.environment["TROUPE_HOME"] = troupe_home().string();
  options.owner = "mcp-list";
  if (auto timeouts = read_mcp_timeouts(options); !timeouts)
    return fail(timeouts.error());
  std::optional<http_engine> engine;
  if (std::any_of(servers.begin(), servers.end(),
                  [](auto& s) { return s.transport == mcp_transport::http; })) {
    auto started = http_engine::start(sys, libcurl_library());
    if (started)
      engine = std::move(*started);
    options.http = engine;
  }
  int code = 0;
  {
    // Each started once here, those of scope "agent" too: the listing is their one agent.
    auto started = servers;
    for (auto& server : started)
      server.per_agent = false;
    mcp_connections connections{sys, std::move(started), options};
    auto reports = connections.wait_for_startup(sys, termination_pending);
    if (termination_pending())
      code = 130; // interrupted: what the servers said by then
    std::fputs(describe_mcp_servers(servers, reports, true).c_str(), stdout);
    if (code == 0 && get && !reports.empty() && reports.front().status != mcp_status::connected)
      code = 1;
  }
  if (engine)
    engine->stop();
  return code;
}

} // namespace troupe
