#include "orchestrator/run_settings_files.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "orchestrator/claude_flags.hpp"
#include "orchestrator/environment.hpp"
#include "orchestrator/hook_settings.hpp"
#include "tools/registry.hpp"

namespace troupe {

std::string settings_source::where() const {
  return path.empty() ? std::string{"--settings JSON"} : "settings file " + path.string();
}

namespace {

// Claude Code's hooks as troupe can run them: the events troupe has, commands. The rest is set
// aside; what could have guarded a call (another hook type) with a warning.
nlohmann::json runnable_claude_hooks(const nlohmann::json& hooks, const std::string& where) {
  if (!hooks.is_object())
    return hooks; // parse_hook_settings says what is wrong
  auto kept = nlohmann::json::object();
  for (auto& [event, groups] : hooks.items()) {
    if (!parse_hook_event(event)) {
      spdlog::info("{}: hooks.{} is not an event troupe has; skipped", where, event);
      continue;
    }
    if (!groups.is_array()) {
      kept[event] = groups;
      continue;
    }
    auto kept_groups = nlohmann::json::array();
    for (auto group : groups) {
      if (group.is_object() && group.contains("hooks") && group["hooks"].is_array()) {
        auto commands = nlohmann::json::array();
        for (auto& hook : group["hooks"]) {
          if (hook.is_object() && hook.contains("type") && hook["type"] != "command") {
            spdlog::warn("{}: a hook of type {} in hooks.{} is not supported (only \"command\"); "
                         "skipped",
                         where, hook["type"].dump(), event);
            continue;
          }
          commands.push_back(hook);
        }
        group["hooks"] = std::move(commands);
      }
      kept_groups.push_back(std::move(group));
    }
    kept[event] = std::move(kept_groups);
  }
  return kept;
}

} // namespace

expected<std::vector<settings_source>> read_settings(const run_flags& flags,
                                                     const std::filesystem::path& workspace) {
  setting_sources sources;
  if (flags.setting_sources_given) {
    auto parsed = parse_setting_sources(flags.setting_sources);
    if (!parsed)
      return failure{parsed.error()};
    sources = *parsed;
  }
  struct candidate {
    std::filesystem::path path;
    bool claude;
  };
  std::vector<candidate> files;
  if (sources.user)
    files.push_back({config_home() / "troupe/settings.json", false});
  if (sources.project) {
    files.push_back({workspace / ".claude/settings.json", true});
    files.push_back({workspace / ".troupe/settings.json", false});
  }
  if (sources.local) {
    files.push_back({workspace / ".claude/settings.local.json", true});
    files.push_back({workspace / ".troupe/settings.local.json", false});
  }
  std::vector<settings_source> read;
  for (auto& file : files) {
    auto json = read_settings_file(file.path);
    if (!json)
      return failure{json.error()};
    settings_source source{file.path, std::move(*json), file.claude};
    if (source.claude) {
      // Only what means the same in troupe: permissions, hooks (resolve_hooks keeps those
      // troupe can run), MCP servers and which of .mcp.json's may start.
      auto kept = nlohmann::json::object();
      for (auto* key : {"permissions", "hooks", "mcpServers", "enableAllProjectMcpServers",
                        "enabledMcpjsonServers", "disabledMcpjsonServers"})
        if (auto value = source.json.find(key); value != source.json.end())
          kept[key] = *value;
      source.json = std::move(kept);
    }
    read.push_back(std::move(source));
  }
  if (!flags.settings_file.empty()) {
    if (is_inline_json(flags.settings_file)) {
      auto json = json_object_argument(flags.settings_file, "--settings");
      if (!json)
        return failure{json.error()};
      read.push_back({{}, std::move(*json), false});
    } else {
      std::error_code ec;
      if (!std::filesystem::exists(flags.settings_file, ec))
        return failure{"--settings " + flags.settings_file + ": no such file"};
      if (!std::filesystem::is_regular_file(flags.settings_file, ec))
        return failure{"--settings " + flags.settings_file + ": not a regular file"};
      auto json = read_settings_file(flags.settings_file);
      if (!json)
        return failure{json.error()};
      read.push_back({flags.settings_file, std::move(*json), false});
    }
  }
  return read;
}

expected<context_budget> resolve_budget(const run_flags& flags, const std::string& model,
                                        const std::filesystem::path& workspace) {
  context_budget budget;
  budget.limits = limits_for_model(model);
  auto files = read_settings(flags, workspace);
  if (!files)
    return failure{files.error()};
  struct limit {
    const char* key;
    int64_t* into;
    long low;
    long high;
  };
  const limit limits[] = {{"contextWindow", &budget.limits.context_window, 1000, 100000000},
                          {"maxOutputTokens", &budget.limits.max_output_tokens, 16, 10000000}};
  for (auto& file : *files) {
    for (auto& l : limits)
      if (auto value = file.json.find(l.key); value != file.json.end()) {
        if (!value->is_number_integer() || value->get<long>() < l.low ||
            value->get<long>() > l.high)
          return failure{file.where() + ": \"" + l.key +
                         "\" must be a whole number of tokens from " + std::to_string(l.low) +
                         " to " + std::to_string(l.high)};
        *l.into = value->get<int64_t>();
      }
  }
  auto window = count_setting(flags.context_window, "--context-window", "TROUPE_CONTEXT_WINDOW",
                              static_cast<long>(budget.limits.context_window), 1000, 100000000,
                              "tokens");
  auto output = count_setting(flags.max_output_tokens, "--max-output-tokens",
                              "TROUPE_MAX_OUTPUT_TOKENS",
                              static_cast<long>(budget.limits.max_output_tokens), 16, 10000000,
                              "tokens");
  for (auto* checked : {&window, &output})
    if (!*checked)
      return failure{checked->error()};
  budget.limits.context_window = *window;
  budget.limits.max_output_tokens = *output;
  return budget;
}

expected<std::vector<hook_command>> resolve_hooks(const run_flags& flags,
                                                  const std::filesystem::path& workspace) {
  auto files = read_settings(flags, workspace);
  if (!files)
    return failure{files.error()};
  std::vector<hook_command> all;
  for (auto& file : *files) {
    if (file.claude)
      if (auto hooks = file.json.find("hooks"); hooks != file.json.end())
        *hooks = runnable_claude_hooks(*hooks, file.where());
    auto commands = parse_hook_settings(file.json, file.path.empty()
                                                     ? std::filesystem::path{"(--settings JSON)"}
                                                     : file.path);
    if (!commands)
      return failure{commands.error()};
    all.insert(all.end(), commands->begin(), commands->end());
  }
  return all;
}

expected<bool> resolve_project_instructions(const run_flags& flags,
                                            const std::filesystem::path& workspace) {
  auto files = read_settings(flags, workspace);
  if (!files)
    return failure{files.error()};
  bool on = true;
  for (auto& source : *files)
    if (auto value = source.json.find("projectInstructions"); value != source.json.end()) {
      if (!value->is_boolean())
        return failure{source.where() + ": \"projectInstructions\" must be true or false"};
      on = value->get<bool>();
    }
  return on;
}

namespace {

// An --add-dir or an "addDirs" entry: an existing directory, made absolute against `base`.
expected<std::filesystem::path> writable_dir(const std::string& given,
                                             const std::filesystem::path& base,
                                             const std::string& where) {
  std::error_code ec;
  auto path = std::filesystem::path{given};
  auto full = path.is_relative() ? base / path : path;
  if (given.empty() || !std::filesystem::exists(full, ec))
    return failure{where + " '" + given + "': no such directory"};
  if (!std::filesystem::is_directory(full, ec))
    return failure{where + " '" + given + "': not a directory"};
  return std::filesystem::canonical(full, ec);
}

} // namespace

expected<sandbox_settings> resolve_sandbox(const run_flags& flags,
                                           const std::filesystem::path& workspace,
                                           bool default_on) {
  sandbox_settings sandbox;
  sandbox.mode = default_on ? sandbox_mode::workspace_write : sandbox_mode::off;
  sandbox.mode_source = default_on ? "the default when no one is asked (bypass mode)"
                                   : "the default";
  auto files = read_settings(flags, workspace);
  if (!files)
    return failure{files.error()};
  for (auto& file : *files) {
    auto value = file.json.find("sandbox");
    if (value == file.json.end())
      continue;
    auto where = file.where();
    auto object = value->is_object() ? *value : nlohmann::json{{"mode", *value}};
    for (auto& [key, item] : object.items())
      if (key != "mode" && key != "network" && key != "addDirs")
        return failure{where + ": unknown key sandbox." + key + " (expected mode, network, addDirs)"};
    if (auto mode = object.find("mode"); mode != object.end()) {
      auto parsed = mode->is_string() ? parse_sandbox_mode(mode->get<std::string>()) : std::nullopt;
      if (!parsed)
        return failure{where + ": \"sandbox\" must be read-only, workspace-write or off"};
      sandbox.mode = *parsed;
      sandbox.mode_source = where;
    }
    if (auto network = object.find("network"); network != object.end()) {
      if (!network->is_boolean())
        return failure{where + ": sandbox.network must be true or false"};
      sandbox.network = network->get<bool>();
    }
    if (auto dirs = object.find("addDirs"); dirs != object.end()) {
      if (!dirs->is_array())
        return failure{where + ": sandbox.addDirs must be an array of directories"};
      for (auto& dir : *dirs) {
        // Relative to the project for the project's file, else to the workspace.
        auto added = writable_dir(dir.is_string() ? dir.get<std::string>() : "", workspace,
                                  where + ": sandbox.addDirs entry");
        if (!added)
          return failure{added.error()};
        sandbox.add_dirs.push_back(*added);
      }
    }
  }
  if (!flags.sandbox.empty()) {
    auto mode = parse_sandbox_mode(flags.sandbox);
    if (!mode)
      return failure{"invalid --sandbox '" + flags.sandbox +
                     "': expected read-only, workspace-write or off"};
    sandbox.mode = *mode;
    sandbox.mode_source = "--sandbox";
  }
  if (flags.sandbox_network)
    sandbox.network = true;
  std::error_code ec;
  auto here = std::filesystem::current_path(ec);
  for (auto& dir : flags.add_dirs) {
    auto added = writable_dir(dir, here, "--add-dir");
    if (!added)
      return failure{added.error()};
    sandbox.add_dirs.push_back(*added);
  }
  if (sandbox.mode == sandbox_mode::off) {
    if (!flags.add_dirs.empty() || flags.sandbox_network)
      spdlog::warn("--add-dir and --sandbox-network change nothing: the sandbox is off ({})",
                   sandbox.mode_source);
    return sandbox;
  }
  sandbox.keep_read_only = {troupe_home(), config_home() / "troupe"};
  sandbox.temp_base = std::filesystem::temp_directory_path(ec);
  if (ec)
    sandbox.temp_base = "/tmp";
  // A --settings file is kept as it is; a JSON object given inline has no file to keep.
  if (!flags.settings_file.empty() && !is_inline_json(flags.settings_file))
    sandbox.keep_read_only.push_back(std::filesystem::absolute(flags.settings_file, ec));
  sandbox.bwrap = sandbox_program();
  if (auto support = probe_sandbox(sandbox.bwrap); !support.works)
    return failure{"sandbox " + std::string{to_string(sandbox.mode)} + " (" + sandbox.mode_source +
                   ") is not available on this machine: " + support.problem +
                   ". `troupe sandbox --check` says what is there; --sandbox off runs tools "
                   "without walls"};
  return sandbox;
}

expected<permission_policy> resolve_permissions(const run_flags& flags,
                                                const std::filesystem::path& workspace) {
  permission_policy policy;
  if (!flags.permission_mode.empty()) {
    auto mode = parse_permission_mode(flags.permission_mode);
    if (!mode)
      return failure{"invalid --permission-mode '" + flags.permission_mode +
                     "': expected default, accept-edits (acceptEdits), plan, bypass "
                     "(bypassPermissions) or dont-ask (dontAsk)"};
    policy.mode = *mode;
  }
  if (flags.skip_permissions) {
    if (!flags.permission_mode.empty() && policy.mode != permission_mode::bypass)
      return failure{"--dangerously-skip-permissions is permission mode bypass, but "
                     "--permission-mode says " + flags.permission_mode + ": give one"};
    policy.mode = permission_mode::bypass;
  }
  auto files = read_settings(flags, workspace);
  if (!files)
    return failure{files.error()};
  for (auto& file : *files) {
    auto rules = parse_permission_settings(file.json, file.where());
    if (!rules)
      return failure{rules.error()};
    policy.rules.add(*rules);
  }
  // troupe's --allow/--deny take one rule each; Claude Code's lists several.
  auto add_rules = [](const std::string& text,
                      std::vector<permission_rule>& into) -> expected<bool> {
    auto rules = parse_permission_rules(text);
    if (!rules)
      return failure{rules.error()};
    into.insert(into.end(), rules->begin(), rules->end());
    return true;
  };
  for (auto [texts, into] : {std::pair{&flags.allow, &policy.rules.allow},
                             std::pair{&flags.deny, &policy.rules.deny}})
    for (auto& text : *texts)
      if (auto added = add_rules(text, *into); !added)
        return failure{added.error()};
  for (auto [lists, into] : {std::pair{&flags.allowed_tools, &policy.rules.allow},
                             std::pair{&flags.disallowed_tools, &policy.rules.deny}})
    for (auto& list : *lists)
      for (auto& text : split_tool_list(list))
        if (auto added = add_rules(text, *into); !added)
          return failure{added.error()};
  if (flags.tools_given) {
    // --tools: what is not named is not offered, as a bare deny rule would have it.
    auto registry = make_builtin_registry();
    std::vector<std::string> builtin;
    for (auto& tool : registry.tools())
      builtin.push_back(tool.name);
    auto offered = offered_tool_names(flags.tools, builtin);
    if (!offered)
      return failure{offered.error()};
    for (auto& name : builtin)
      if (std::find(offered->begin(), offered->end(), name) == offered->end())
        policy.rules.deny.push_back({name, std::nullopt, name});
  }
  policy.context.cwd = workspace;
  policy.context.home = home_dir();
  return policy;
}

} // namespace troupe
