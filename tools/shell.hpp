#pragma once
// The `shell` tool: commands run one after another by the session's own bash, a child in a
// process group of its own. The working directory and variables carry over between calls.

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "protocol/expected.hpp"
#include "protocol/process.hpp"
#include "tools/child_process.hpp"
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

/// A shell started before the executor that runs its commands: troupe run starts the top-level
/// agent's while the rest of the session is set up, so that bubblewrap's namespaces and mounts
/// (~5 ms of CPU, ~7 ms to bash) are behind it by the first command. It starts on a thread of its own, beside
/// the start-up rather than in it; the executor takes it, once. One that nobody took is
/// stopped when the last context holding it goes.
class shell_ahead {
public:
  /// Starts the shell for `context` (start_shell). The thread that starts it then stays, idle,
  /// for as long as the process: a sandbox is killed when the THREAD that started it ends
  /// (bubblewrap's --die-with-parent).
  shell_ahead(tool_context context, std::string nonce);
  ~shell_ahead();
  shell_ahead(const shell_ahead&) = delete;
  shell_ahead& operator=(const shell_ahead&) = delete;

  /// The shell once it has started, to the first caller only; nothing when it could not start
  /// (the caller's own start then says why) or was taken already.
  std::optional<shell_process> take();

private:
  struct state {
    std::mutex mutex;
    std::condition_variable started;
    bool done = false;
    std::optional<shell_process> shell;
  };
  /// Whichever ends last, this object or its thread's work, frees it.
  std::shared_ptr<state> state_;
};

/// Returns the timeout for one call: input `timeout` (seconds) or the context's default.
std::chrono::milliseconds shell_timeout(const nlohmann::json& input, const tool_context& ctx);

/// Starts the session's bash in the workspace, in a process group of its own, with an empty
/// signal mask and default dispositions. Never blocks on the child.
expected<shell_process> start_shell(const tool_context& ctx, std::string nonce);

/// Starts `command` as a background task: `bash -c` in the workspace, a session and process
/// group of its own, stdin empty, stdout and stderr written to `log` (created owner-only), its
/// processes tagged `owner`. The caller supervises it (supervise_child: no pipes to read).
expected<started_child> start_background(const tool_context& ctx, const std::string& command,
                                         const std::filesystem::path& log,
                                         const std::string& owner);

/// Hands one command to the shell (its stdin is /dev/null; stderr joins stdout).
expected<bool> send_command(const shell_process& shell, const std::string& command);

/// How to supervise the command just sent to `shell` (supervise_child, on a copy of its output
/// pipe): its output up to the end marker, capped at `output_cap` (head and tail kept); after a
/// kill, output is read for `kill_grace` more. The supervision ends with the command, or with
/// bash itself (an `exit`, a kill), which it then reaps.
supervision command_supervision(const shell_process& shell, size_t output_cap,
                                std::chrono::milliseconds kill_grace);

/// The command's output and status from its supervision's end; `shell_exited` is set when
/// bash is gone or was given up on (the next command needs a new one).
process_exit command_exit(const child_end& end);

/// Stops the shell's process group and every process it left behind (by its owner tag), and
/// closes its pipes (the process is reaped by whoever waits on it, or here when `reap` is set).
void stop_shell(shell_process& shell, bool reap);

/// Renders a finished process as the result the model sees.
tool_result shell_result(const process_exit& exit, bool timed_out,
                         std::chrono::milliseconds timeout, bool interrupted);

} // namespace troupe
