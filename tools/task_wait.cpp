#include "tools/task_wait.hpp"

#include <algorithm>

namespace troupe {

std::chrono::milliseconds task_wait_timeout(const nlohmann::json& input) {
  double seconds = default_task_wait_seconds;
  if (auto t = input.find("timeout"); t != input.end() && t->is_number())
    seconds = t->get<double>();
  seconds = std::clamp(seconds, 0.0, max_task_wait_seconds);
  return std::chrono::milliseconds{static_cast<int64_t>(seconds * 1000)};
}

// Carried out by the agent supervisor, which owns the agents (actors/agent_supervisor.cpp).
tool_spec task_wait_tool() {
  tool_spec spec;
  spec.name = "task_wait";
  spec.description =
    "Wait for background agents you launched with the task tool: until all of them end (mode "
    "\"all\", default) or the first one does (\"any\"), or `timeout` seconds pass (default 30, "
    "max 600). Returns each agent's state and, for those that ended while you waited, its "
    "result (no <task-notification> follows for those). Without `agent_ids` it waits for every "
    "agent still running.";
  spec.input_schema = {
    {"type", "object"},
    {"properties",
     {{"agent_ids",
       {{"type", "array"},
        {"items", {{"type", "string"}}},
        {"description", "the agents to wait for (default: all running)"}}},
      {"mode",
       {{"type", "string"},
        {"enum", {"all", "any"}},
        {"description", "all (default): until every one ended; any: until the first did"}}},
      {"timeout",
       {{"type", "number"},
        {"minimum", 0},
        {"maximum", max_task_wait_seconds},
        {"description", "most seconds to wait (default 30)"}}}}}};
  // Waiting changes nothing: no approval needed, and it may run beside other read-only calls.
  spec.read_only = true;
  spec.kind = tool_kind::subagent;
  return spec;
}

} // namespace troupe
