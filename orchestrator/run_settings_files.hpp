#pragma once
// The settings files a run reads (user, project, --settings) and what they decide: the context
// budget, the hook commands and the permission policy.

#include <filesystem>
#include <string>
#include <vector>

#include "context/token_budget.hpp"
#include "orchestrator/run_flags.hpp"
#include "protocol/expected.hpp"
#include "protocol/hooks.hpp"
#include "tools/permissions.hpp"
#include "tools/sandbox.hpp"

namespace troupe {

/// One source of settings, read, in the order they apply.
struct settings_source {
  /// The file; empty for a JSON object given as --settings.
  std::filesystem::path path;
  nlohmann::json json;
  /// Claude Code's (.claude/settings.json, .claude/settings.local.json): only its permissions,
  /// the hooks troupe can run and its MCP keys are read; its "sandbox" is Claude Code's, not
  /// troupe's.
  bool claude = false;
  /// "settings file PATH" or "--settings JSON", for messages.
  std::string where() const;
};

/// The settings files in the order they apply, as --setting-sources chooses (all by default):
/// the user's (troupe's config directory), the project's (.claude/settings.json, then
/// .troupe/settings.json), the local ones (.claude/settings.local.json, then
/// .troupe/settings.local.json), then --settings (a file, which must exist, or a JSON object).
/// A file that does not exist is an empty object.
expected<std::vector<settings_source>> read_settings(const run_flags& flags,
                                                     const std::filesystem::path& workspace);

/// The context window and output size: the model's row of the built-in table, then the settings
/// files ("contextWindow", "maxOutputTokens"), then the environment, then the flags.
expected<context_budget> resolve_budget(const run_flags& flags, const std::string& model,
                                        const std::filesystem::path& workspace);

/// The hook commands of every settings file, in the order the files apply.
expected<std::vector<hook_command>> resolve_hooks(const run_flags& flags,
                                                  const std::filesystem::path& workspace);

/// Whether the project's instruction files are read: a settings file's "projectInstructions"
/// (true or false; the last file that says wins), true by default.
expected<bool> resolve_project_instructions(const run_flags& flags,
                                            const std::filesystem::path& workspace);

/// The sandbox from the flags, then the settings files' "sandbox" (a mode, or an object with
/// "mode", "network" and "addDirs"), then the default: workspace-write when `default_on`,
/// else off. A mode other than off that this machine cannot provide is an error.
expected<sandbox_settings> resolve_sandbox(const run_flags& flags,
                                           const std::filesystem::path& workspace,
                                           bool default_on);

/// The permission policy from the settings files and the flags, which come last.
expected<permission_policy> resolve_permissions(const run_flags& flags,
                                                const std::filesystem::path& workspace);

} // namespace troupe
