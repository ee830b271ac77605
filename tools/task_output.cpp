#include "tools/task_output.hpp"

namespace troupe {

// task_output and task_stop act on state the executor owns (the tasks it started), so they
// have no `run`: the executor carries them out. The specs are what the model and the
// permission check see.

tool_spec task_output_tool() {
  tool_spec spec;
  spec.name = "task_output";
  spec.description =
    "Read what a background task (shell with run_in_background) has printed, with its exit "
    "code once it ended, or a background agent's result (its agent id). By default it waits until the task ends or `timeout` seconds pass "
    "(default 30, max 600); block: false returns at once.";
  spec.input_schema = {
    {"type", "object"},
    {"properties",
     {{"task_id", {{"type", "string"}, {"description", "the id shell or task returned"}}},
      {"block", {{"type", "boolean"}, {"description", "wait for the task to end (default true)"}}},
      {"timeout", {{"type", "number"}, {"description", "most seconds to wait (default 30)"}}}}},
    {"required", {"task_id"}}};
  spec.read_only = true;
  spec.kind = tool_kind::task;
  return spec;
}

} // namespace troupe
