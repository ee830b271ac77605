#include "orchestrator/run_settings_files.hpp"

#include <spdlog/spdlog.h>

#include "orchestrator/environment.hpp"
#include "orchestrator/hook_settings.hpp"

namespace troupe {

expected<std::vector<std::filesystem::path>> settings_files(const run_flags& flags,
                                                            const std::filesystem::path& workspace) {
  std::vector<std::filesystem::path> files = {config_home() / "troupe/settings.json",
                                              workspace / ".troupe/settings.json"};
  if (!flags.settings_file.empty()) {
    std::error_code ec;
    if (!std::filesystem::exists(flags.settings_file, ec))
      return failure{"--settings " + flags.settings_file + ": no such file"};
    if (!std::filesystem::is_regular_file(flags.settings_file, ec))
      return failure{"--settings " + flags.settings_file + ": not a regular file"};
    files.emplace_back(flags.settings_file);
  }
  return files;
}

namespace {

struct settings_file {
  std::filesystem::path path;
  nlohmann::json json;
};

// The settings files, read, in the order they apply.
expected<std::vector<settings_file>> read_settings(const run_flags& flags,
                                                   const std::filesystem::path& workspace) {
  auto files = settings_files(flags, workspace);
  if (!files)
    return failure{files.error()};
  std::vector<settings_file> read;
  for (auto& file : *files) {
    auto json = read_settings_file(file);
    if (!json)
      return failure{json.error()};
    read.push_back({file, std::move(*json)});
  }
  return read;
}

} // namespace

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
  for (auto& [file, json] : *files) {
    for (auto& l : limits)
      if (auto value = json.find(l.key); value != json.end()) {
        if (!value->is_number_integer() || value->get<long>() < l.low ||
            value->get<long>() > l.high)
          return failure{"settings file " + file.string() + ": \"" + l.key +
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
  for (auto& [file, json] : *files) {
    auto commands = parse_hook_settings(json, file);
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
  for (auto& [file, json] : *files)
    if (auto value = json.find("projectInstructions"); value != json.end()) {
      if (!value->is_boolean())
        return failure{"settings file " + file.string() +
                       ": \"projectInstructions\" must be true or false"};
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
  for (auto& [file, json] : *files) {
    auto value = json.find("sandbox");
    if (value == json.end())
      continue;
    auto where = "settings file " + file.string();
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
  if (!flags.settings_file.empty())
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
                     "': expected default, accept-edits, plan or bypass"};
    policy.mode = *mode;
  }
  auto files = settings_files(flags, workspace);
  if (!files)
    return failure{files.error()};
  for (auto& file : *files) {
    auto rules = load_permission_rules(file);
    if (!rules)
      return failure{rules.error()};
    policy.rules.add(*rules);
  }
  for (auto [texts, into] : {std::pair{&flags.allow, &policy.rules.allow},
                             std::pair{&flags.deny, &policy.rules.deny}})
    for (auto& text : *texts) {
      auto rules = parse_permission_rules(text);
      if (!rules)
        return failure{rules.error()};
      into->insert(into->end(), rules->begin(), rules->end());
    }
  policy.context.cwd = workspace;
  policy.context.home = home_dir();
  return policy;
}

} // namespace troupe
