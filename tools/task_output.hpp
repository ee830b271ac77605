#pragma once

#include "tools/tool_spec.hpp"

namespace troupe {

/// Returns the `task_output` tool: what a background task printed, waiting for it if asked.
tool_spec task_output_tool();

/// Returns what a task's log holds, at most about `budget` bytes of it: the whole log when it
/// fits, else its head and tail (cut at UTF-8 character boundaries) around a line saying how
/// much was left out and where the whole log is. Two bounded reads, whatever the log's size; a
/// log not yet written reads as empty.
std::string log_excerpt(const std::filesystem::path& log, size_t budget);

} // namespace troupe
