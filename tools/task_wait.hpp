#pragma once

#include <chrono>

#include "tools/tool_spec.hpp"

namespace troupe {

/// Returns the `task_wait` tool: waits for background agents (all of them, or the first).
tool_spec task_wait_tool();

/// Default and longest wait of task_wait and task_output, in seconds.
inline constexpr double default_task_wait_seconds = 30;
inline constexpr double max_task_wait_seconds = 600;

/// How long a task_wait or task_output call waits: its `timeout` (seconds) within 0–600, 30
/// without one.
std::chrono::milliseconds task_wait_timeout(const nlohmann::json& input);

} // namespace troupe
