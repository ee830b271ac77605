#include "orchestrator/mcp_config.hpp"

#include <cstdlib>
#include <map>
#include <set>

#include "orchestrator/claude_flags.hpp"
#include "orchestrator/run_flags.hpp"
#include "protocol/bounded_json.hpp"
#include "protocol/private_files.hpp"

namespace troupe {

namespace {

using json = nlohmann::json;

// A .mcp.json is a few servers: one the size of a disk image is not one.
constexpr uintmax_t max_project_file_bytes = 16 * 1024 * 1024;

struct raw_server {
  json entry;
  std::string source;
};

// Which .mcp.json servers the settings let start: the last file that says
// "enableAllProjectMcpServers" wins, the name lists add up, a disabled name stays out.
struct project_approvals {
  bool all = false;
  std::set<std::string> enabled;
  std::set<std::string> disabled;

  bool approves(const std::string& name) const {
    return disabled.count(name) == 0 && (all || enabled.count(name) != 0);
  }
};

expected<project_approvals> read_approvals(const std::vector<settings_source>& settings) {
  project_approvals approvals;
  for (auto& source : settings) {
    if (auto all = source.json.find("enableAllProjectMcpServers"); all != source.json.end()) {
      if (!all->is_boolean())
        return failure{source.where() + ": \"enableAllProjectMcpServers\" must be true or false"};
      approvals.all = all->get<bool>();
    }
    for (auto [key, into] : {std::pair{"enabledMcpjsonServers", &approvals.enabled},
                             std::pair{"disabledMcpjsonServers", &approvals.disabled}}) {
      auto names = source.json.find(key);
      if (names == source.json.end())
        continue;
      if (!names->is_array())
        return failure{source.where() + ": \"" + key + "\" must be an array of server names"};
      for (auto& name : *names) {
        if (!name.is_string())
          return failure{source.where() + ": \"" + key + "\" must be an array of server names"};
        into->insert(name.get<std::string>());
      }
    }
  }
  return approvals;
}

// The servers of one {"mcpServers": {…}} object, over what an earlier source gave; `source`
// names it in errors and in each server. `approvals`: a project's file, whose unapproved servers
// are left out (with a notice unless the user disabled them).
expected<bool> add_servers(const json& config, const std::string& source,
                           std::map<std::string, raw_server>& servers,
                           const project_approvals* approvals, std::vector<std::string>& notices) {
  auto found = config.find("mcpServers");
  if (found == config.end())
    return true;
  if (!found->is_object())
    return failure{source + ": \"mcpServers\" must be an object of servers"};
  for (auto& [name, entry] : found->items()) {
    if (approvals && !approvals->approves(name)) {
      // A repository's .mcp.json starts programs: only the user's settings let it (Claude
      // Code's rule).
      if (approvals->disabled.count(name) == 0) {
        auto quoted = json(name).dump(-1, ' ', false, json::error_handler_t::replace);
        notices.push_back("MCP server " + quoted + " of " + source +
                          " is not started: it is not approved. To start it, add "
                          "\"enabledMcpjsonServers\": [" + quoted +
                          "] (or \"enableAllProjectMcpServers\": true) to "
                          ".claude/settings.local.json or .troupe/settings.local.json");
      }
      continue;
    }
    servers[name] = raw_server{entry, source};
  }
  return true;
}

expected<json> read_project_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return json{};
  if (std::filesystem::is_regular_file(path, ec) &&
      std::filesystem::file_size(path, ec) > max_project_file_bytes)
    return failure{path.string() + " is larger than " +
                   std::to_string(max_project_file_bytes / 1024 / 1024) + " MiB"};
  std::string text;
  if (auto problem = read_whole_file(path, text); !problem.empty())
    return failure{problem};
  auto parsed = parse_json_bounded(text);
  if (!parsed || !parsed->is_object()) {
    bool too_deep = !parsed && parsed.error() != invalid_json_message;
    return failure{path.string() + " is not a JSON object" +
                   (too_deep ? " (" + parsed.error() + ")" : "")};
  }
  return std::move(*parsed);
}

// Expands the strings Claude Code expands, in place; what is not a string is left for
// parse_mcp_server to refuse.
expected<bool> expand_entry(json& entry, const std::string& prefix, const variable_lookup& lookup) {
  if (!entry.is_object())
    return true;
  auto expand = [&](json& value, const std::string& field) -> expected<bool> {
    if (!value.is_string())
      return true;
    auto expanded = expand_mcp_variables(value.get<std::string>(), lookup);
    if (!expanded)
      return failure{prefix + "." + field + ": " + expanded.error()};
    value = std::move(*expanded);
    return true;
  };
  for (auto* key : {"command", "url"})
    if (auto value = entry.find(key); value != entry.end())
      if (auto done = expand(*value, key); !done)
        return done;
  if (auto args = entry.find("args"); args != entry.end() && args->is_array())
    for (auto& arg : *args)
      if (auto done = expand(arg, "args"); !done)
        return done;
  for (auto* key : {"env", "headers"})
    if (auto values = entry.find(key); values != entry.end() && values->is_object())
      for (auto& [name, value] : values->items())
        if (auto done = expand(value, std::string{key} + "." + name); !done)
          return done;
  return true;
}

} // namespace

expected<mcp_configuration> gather_mcp_servers(const std::vector<settings_source>& settings,
                                               const std::filesystem::path& workspace,
                                               const nlohmann::json& mcp_config, bool strict,
                                               const variable_lookup& lookup) {
  std::map<std::string, raw_server> servers;
  mcp_configuration gathered;
  if (!strict) {
    for (auto& source : settings)
      if (auto added = add_servers(source.json, source.where(), servers, nullptr, gathered.notices);
          !added)
        return failure{added.error()};
    auto approvals = read_approvals(settings);
    if (!approvals)
      return failure{approvals.error()};
    // The repository's file, not the user's words: a broken one is left out with a notice
    // (as Claude Code goes on without it), never a reason to refuse every run here.
    auto path = workspace / ".mcp.json";
    auto project = read_project_file(path);
    if (!project) {
      gathered.notices.push_back(project.error() + "; its MCP servers are left out");
    } else if (!project->is_null()) {
      auto kept = servers;
      if (auto added = add_servers(*project, path.string(), servers, &*approvals, gathered.notices);
          !added) {
        servers = std::move(kept);
        gathered.notices.push_back(added.error() + "; its MCP servers are left out");
      }
    }
  }
  if (!mcp_config.is_null())
    if (auto added = add_servers(mcp_config, "--mcp-config", servers, nullptr, gathered.notices);
        !added)
      return failure{added.error()};
  for (auto& [name, server] : servers) {
    if (auto expanded = expand_entry(server.entry, server.source + ": mcpServers." + name, lookup);
        !expanded)
      return failure{expanded.error()};
    auto parsed = parse_mcp_server(name, server.entry, server.source);
    if (!parsed)
      return failure{parsed.error()};
    gathered.servers.push_back(std::move(*parsed));
  }
  return gathered;
}

expected<mcp_configuration> resolve_mcp_servers(const run_flags& flags,
                                                const std::filesystem::path& workspace,
                                                const variable_lookup& lookup) {
  json given;
  if (!flags.mcp_configs.empty()) {
    auto merged = merge_mcp_configs(flags.mcp_configs);
    if (!merged)
      return failure{merged.error()};
    given = std::move(*merged);
  }
  std::vector<settings_source> settings;
  if (!flags.strict_mcp_config) {
    auto read = read_settings(flags, workspace);
    if (!read)
      return failure{read.error()};
    settings = std::move(*read);
  }
  return gather_mcp_servers(settings, workspace, given, flags.strict_mcp_config, lookup);
}

std::optional<std::string> process_variable(const std::string& name) {
  if (const char* value = std::getenv(name.c_str()))
    return std::string{value};
  return std::nullopt;
}

} // namespace troupe
