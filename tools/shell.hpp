#pragma once
// The `shell` tool: commands run one after another by the session's own bash, a child in a
// process group of its own. The working directory and variables carry over between calls.

#include <sys/types.h>

#include <chrono>
#include <string>

#include "protocol/expected.hpp"
#include "protocol/process.hpp"
#include "tools/tool_spec.hpp"

namespace troupe {

/// Returns the `shell` tool's spec (a process tool: the executor starts and reads it).
tool_spec shell_tool();

/// The session's bash: one process (and process group) that runs the commands one after
/// another, so the working directory, variables and functions carry over between calls.
struct shell_process {
  pid_t pid = -1;
  int input_fd = -1;
  int output_fd = -1;
  /// Random text that frames each command's end in the output; commands cannot forge it.
  std::string nonce;
  /// What its processes are tagged with (`<session>/shell-…`); empty: untagged.
  std::string owner;
};

/// Returns the timeout for one call: input `timeout` (seconds) or the context's default.
std::chrono::milliseconds shell_timeout(const nlohmann::json& input, const tool_context& ctx);

/// Starts the session's bash in the workspace, in a process group of its own, with an empty
/// signal mask and default dispositions. Never blocks on the child.
expected<shell_process> start_shell(const tool_context& ctx, std::string nonce);

/// Starts `command` as a background task: `bash -c` in the workspace, a session and process
/// group of its own, stdin empty, stdout and stderr written to `log`, its processes tagged
/// `owner`. Returns its pid; the caller reaps it with wait_child.
expected<pid_t> start_background(const tool_context& ctx, const std::string& command,
                                 const std::filesystem::path& log, const std::string& owner);

/// Hands one command to the shell (its stdin is /dev/null; stderr joins stdout).
expected<bool> send_command(const shell_process& shell, const std::string& command);

/// Reads the command's output from `output_fd` (the reader's own copy of the shell's pipe) up
/// to the end marker and returns it with the command's exit status; `shell_exited` is set when
/// bash itself ended (an `exit`, a kill), in which case it is reaped here. Any byte on
/// `wake_fd` makes it give up at once (the executor stopped waiting: a process that left the
/// shell's group may hold the pipe open forever). Blocks: call it off the scheduler threads.
process_exit wait_for_command(const shell_process& shell, int output_fd, int wake_fd,
                              size_t output_cap);

/// Stops the shell's process group and every process it left behind (by its owner tag), and
/// closes its pipes (the process is reaped by whoever waits on it, or here when `reap` is set).
void stop_shell(shell_process& shell, bool reap);

/// Renders a finished process as the result the model sees.
tool_result shell_result(const process_exit& exit, bool timed_out,
                         std::chrono::milliseconds timeout, bool interrupted);

} // namespace troupe
