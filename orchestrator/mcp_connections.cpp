#include "orchestrator/mcp_connections.hpp"

#include <algorithm>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "orchestrator/cli.hpp"
#include "orchestrator/environment.hpp"

namespace troupe {

namespace {

expected<std::chrono::milliseconds> timeout_variable(const char* name,
                                                     std::chrono::milliseconds fallback) {
  auto text = env_or(name);
  if (text.empty())
    return fallback;
  auto value = parse_count(text, std::string{"$"} + name, 1, 24L * 3600 * 1000, "milliseconds");
  if (!value)
    return failure{value.error()};
  return std::chrono::milliseconds{*value};
}

} // namespace

expected<bool> read_mcp_timeouts(mcp_start_options& options) {
  auto startup = timeout_variable("MCP_TIMEOUT", options.startup_timeout);
  if (!startup)
    return failure{startup.error()};
  auto call = timeout_variable("MCP_TOOL_TIMEOUT", options.call_timeout);
  if (!call)
    return failure{call.error()};
  options.startup_timeout = *startup;
  options.call_timeout = *call;
  return true;
}

mcp_connections::mcp_connections(caf::actor_system& sys, std::vector<mcp_server_config> servers,
                                 mcp_start_options options)
  : configs_(std::move(servers)),
    options_(std::move(options)),
    started_(std::chrono::steady_clock::now()) {
  for (auto& config : configs_)
    if (!config.per_agent)
      shared_.emplace(config.name,
                      spawn_mcp_server(sys, setup_for(config, options_.owner + ":mcp-" +
                                                                config.name)));
}

mcp_connections::~mcp_connections() { stop(); }

mcp_server_setup mcp_connections::setup_for(const mcp_server_config& config,
                                            const std::string& owner) const {
  mcp_server_setup setup;
  setup.config = config;
  if (config.transport == mcp_transport::stdio)
    setup.program = config.command.find('/') != std::string::npos
                      ? (std::filesystem::path{config.command}.is_absolute()
                           ? config.command
                           : (options_.workspace / config.command).string())
                      : find_program(config.command);
  setup.workspace = options_.workspace;
  setup.environment = options_.environment;
  setup.owner = owner;
  setup.sandbox = options_.sandbox;
  setup.http = options_.http;
  setup.client = options_.client;
  setup.startup_timeout = options_.startup_timeout;
  setup.call_timeout = options_.call_timeout;
  setup.client_version = troupe_version;
  return setup;
}

std::vector<mcp_server_report>
mcp_connections::wait_for_startup(caf::actor_system& sys, const std::function<bool()>& stop) const {
  // A moment past the bound: the servers' own start-up timers, due at the same time, say
  // "failed" first.
  auto deadline = started_ + options_.startup_timeout + std::chrono::milliseconds{250};
  constexpr std::chrono::milliseconds slice{100};
  std::vector<mcp_server_report> reports;
  caf::scoped_actor self{sys};
  bool stopped = false;
  for (auto& config : configs_) {
    mcp_server_report report;
    report.server = config.name;
    report.transport = to_string(config.transport);
    auto found = shared_.find(config.name);
    // All started together: each waits for what is left of the one bound, a slice at a time
    // so that a signal is seen.
    while (found != shared_.end()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
      auto wait = stopped ? std::chrono::milliseconds{0}
                          : std::clamp(left, std::chrono::milliseconds{0}, slice);
      self->request(found->second, wait + std::chrono::seconds{2}, list_atom::value,
                    static_cast<int64_t>(wait.count()))
        .receive([&](mcp_server_report& answer) { report = std::move(answer); },
                 [&](caf::error&) {
                   report.status = mcp_status::failed;
                   report.error = "it did not answer";
                 });
      if (report.status != mcp_status::pending || stopped || left <= wait)
        break;
      if (stop && stop())
        stopped = true; // what the others say now, without waiting
    }
    reports.push_back(std::move(report));
  }
  return reports;
}

mcp_connections::agent_servers mcp_connections::attach(caf::actor_system& sys,
                                                       const std::string& owner) const {
  agent_servers mine;
  for (auto& config : configs_) {
    if (auto found = shared_.find(config.name); found != shared_.end()) {
      mine.servers.emplace(config.name, found->second);
      continue;
    }
    auto actor = spawn_mcp_server(sys, setup_for(config, owner + ":mcp-" + config.name));
    mine.servers.emplace(config.name, actor);
    mine.owned.push_back(actor);
  }
  return mine;
}

void mcp_connections::stop() {
  for (auto& [name, actor] : shared_)
    caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
  shared_.clear();
  if (options_.own_http && options_.http) {
    options_.http->stop();
    options_.own_http = false;
  }
}

nlohmann::json mcp_init_entries(const std::vector<mcp_server_report>& reports) {
  auto entries = nlohmann::json::array();
  for (auto& report : reports)
    entries.push_back({{"name", report.server}, {"status", to_string(report.status)}});
  return entries;
}

std::string describe_mcp_servers(const std::vector<mcp_server_config>& configs,
                                 const std::vector<mcp_server_report>& reports, bool with_tools) {
  if (configs.empty())
    return "No MCP servers configured (--mcp-config, .mcp.json, \"mcpServers\" in settings).\n";
  std::string text;
  for (size_t i = 0; i < configs.size(); ++i) {
    const auto& config = configs[i];
    const mcp_server_report* report = i < reports.size() ? &reports[i] : nullptr;
    auto target = config.transport == mcp_transport::http  ? config.url
                  : config.transport == mcp_transport::sdk ? std::string{"in the client"}
                                                           : [&] {
                        auto line = config.command;
                        for (auto& arg : config.args)
                          line += " " + arg;
                        return line;
                      }();
    text += config.name + ": " + target + " (" + to_string(config.transport) +
            (config.per_agent ? ", one per agent" : "") + ", from " + config.source + ")";
    text += report == nullptr ? std::string{"\n"} : describe_mcp_report(*report, with_tools);
  }
  return text;
}

} // namespace troupe
