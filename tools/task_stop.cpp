#include "tools/task_stop.hpp"

namespace troupe {

// Carried out by the executor, which owns the tasks (see task_output.cpp).
tool_spec task_stop_tool() {
  tool_spec spec;
  spec.name = "task_stop";
  spec.description = "Stop a background task (its whole process group is killed; returns what "
                     "it printed) or a background agent (by its agent id; no notification "
                     "follows).";
  spec.input_schema = {
    {"type", "object"},
    {"properties", {{"task_id", {{"type", "string"}, {"description", "the id shell or task returned"}}}}},
    {"required", {"task_id"}}};
  // Stopping what this session started changes nothing else: no approval needed.
  spec.read_only = true;
  spec.kind = tool_kind::task;
  return spec;
}

} // namespace troupe
