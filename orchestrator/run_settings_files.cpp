#include "orchestrator/run_settings_files.hpp"

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

expected<context_budget> resolve_budget(const run_flags& flags, const std::string& model,
                                        const std::filesystem::path& workspace) {
  context_budget budget;
  budget.limits = limits_for_model(model);
  auto files = settings_files(flags, workspace);
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
    auto json = read_settings_file(file);
    if (!json)
      return failure{json.error()};
    for (auto& l : limits)
      if (auto value = json->find(l.key); value != json->end()) {
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
  auto files = settings_files(flags, workspace);
  if (!files)
    return failure{files.error()};
  std::vector<hook_command> all;
  for (auto& file : *files) {
    auto json = read_settings_file(file);
    if (!json)
      return failure{json.error()};
    auto commands = parse_hook_settings(*json, file);
    if (!commands)
      return failure{commands.error()};
    all.insert(all.end(), commands->begin(), commands->end());
  }
  return all;
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
      auto rule = parse_permission_rule(text);
      if (!rule)
        return failure{rule.error()};
      into->push_back(*rule);
    }
  policy.context.cwd = workspace;
  policy.context.home = home_dir();
  return policy;
}

} // namespace troupe
