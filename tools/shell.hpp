#pragma once
// The `shell` tool: a command run by bash in a child process of its own process group.
// The working directory and exported variables carry over between calls of one session.

#include <sys/types.h>

#include <chrono>
#include <string>

#include "protocol/expected.hpp"
#include "protocol/process.hpp"
#include "tools/tool_spec.hpp"

namespace troupe {

/// Returns the `shell` tool's spec (a process tool: the executor starts and reads it).
tool_spec shell_tool();

/// A child started by start_shell: its pid (also its process group) and its output pipe.
struct shell_child {
  pid_t pid = -1;
  int output_fd = -1;
};

/// Returns the timeout for one call: input `timeout` (seconds) or the context's default.
std::chrono::milliseconds shell_timeout(const nlohmann::json& input, const tool_context& ctx);

/// Starts `bash` for the command in input, in the directory and with the exported variables
/// the previous call left behind. Never blocks on the child.
expected<shell_child> start_shell(const nlohmann::json& input, const tool_context& ctx);

/// Reads the child's output to the end and reaps it. Blocks: call it off the scheduler threads.
/// A background job that keeps the pipe open does not hold it up once bash has exited.
process_exit wait_for_shell(shell_child child, size_t output_cap);

/// Renders a finished process as the result the model sees.
tool_result shell_result(const process_exit& exit, bool timed_out,
                         std::chrono::milliseconds timeout, bool interrupted);

} // namespace troupe
