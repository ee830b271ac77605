// Settings files (permissions, hooks, budget: tools/permissions, orchestrator/hook_settings,
// orchestrator/run_settings_files) and a hook command's JSON answer (actors/hook_runner).

#include <string>

#include "actors/hook_runner.hpp"
#include "fuzz/targets.hpp"
#include "orchestrator/hook_settings.hpp"
#include "orchestrator/run_settings_files.hpp"
#include "tools/permissions.hpp"

namespace troupe::fuzz {

int settings(const uint8_t* data, size_t size) {
  const char* path = scratch_file("settings.json");
  write_scratch(path, data, size);
  load_permission_rules(path);
  if (auto json = read_settings_file(path))
    parse_hook_settings(*json, path);
  // The same file as --settings of a run whose workspace has none.
  run_flags flags;
  flags.settings_file = path;
  std::filesystem::path workspace = std::filesystem::path{path}.parent_path();
  resolve_budget(flags, "gpt-4o", workspace);
  resolve_hooks(flags, workspace);
  resolve_permissions(flags, workspace);
  // The bytes as what a hook command printed: an answer, context, or nothing.
  hook_process_result printed;
  printed.out.assign(reinterpret_cast<const char*>(data), size);
  for (auto event : {hook_event::pre_tool_use, hook_event::post_tool_use,
                     hook_event::session_start, hook_event::stop}) {
    std::vector<std::string> outcomes;
    auto outcome = combine_hook_results(event, {printed}, &outcomes);
    fuzz_check(outcomes.size() == 1, "one outcome per command");
    fuzz_check(!outcome.blocked || !outcome.reason.empty(), "a block says why");
  }
  return 0;
}

} // namespace troupe::fuzz
