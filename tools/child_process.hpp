#pragma once
// The one place troupe runs child processes (the shell tool, background tasks, hook commands).
// Each starts in a session of its own, so it has no terminal and its process group can be
// killed as a whole, with the signal mask and dispositions the CLI changed put back, with its
// session's variables over troupe's environment, and tagged with the owner it belongs to
// (TROUPE_PROCESS_OWNER), so that what it leaves behind can be found and stopped
// (tools/process_reaper). Every child started here is in a registry until its starter has
// waited for it: the reaper collects only the other children of the process.
//
// supervise_child then runs a child to its end on the caller's thread (never a scheduler
// thread: actors/process_runner gives it one of its own): it feeds its stdin, reads its output
// to the end within a cap, kills its group at its timeout or when its starter says stop,
// reaps it and kills what it left behind under its tag.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/expected.hpp"

namespace troupe {

/// The variable that names a tool process's owner: `<session id>` or `<session id>/<unit>`.
constexpr const char* process_owner_variable = "TROUPE_PROCESS_OWNER";

/// Variables a child gets over the ones it inherits from this process, by name (a session's
/// TROUPE_SESSION_ID, a hook's CLAUDE_PROJECT_DIR, …). This process's own environment is never
/// changed: each session passes its own to its children.
using child_environment = std::map<std::string, std::string>;

/// Starts `program` with `argv` in `cwd`, its stdin, stdout and stderr on the given
/// descriptors, with this process's environment and `environment` over it. A non-empty `owner`
/// is set as TROUPE_PROCESS_OWNER in the child's environment. Sets `pid` and returns 0, or
/// returns the posix_spawn error. Never blocks on the child. Its starter must reap it with
/// wait_child. `pass_fd` (≥ 4), when set, is the child's fd 3 (a sandbox's seccomp program).
int spawn_child(const std::string& program, const char* const argv[],
                const child_environment& environment, const std::filesystem::path& cwd, int in,
                int out, int err, pid_t& pid, const std::string& owner = "", int pass_fd = -1);

/// waitpid for a child started by spawn_child; once it is reaped (or is no child any more) it
/// leaves the registry. Retries on EINTR. Returns what waitpid returned.
pid_t wait_child(pid_t pid, int& status, int options = 0);

/// The owner tag (TROUPE_PROCESS_OWNER) of a child a starter still waits for, "" for none;
/// nullopt for any other process (an adopted orphan, say), whose tag only its environment tells.
std::optional<std::string> started_owner(pid_t pid);

/// Reaps those of `pids` (children of this process) that no starter waits for: orphans that
/// were re-parented to this process. Never blocks.
void reap_unclaimed(const std::vector<pid_t>& pids);

/// Returns a wait status as troupe reports it: the exit code, or 128 + the signal that ended
/// the process (-1 for neither).
int32_t exit_code_of(int status);

/// Keeps at most `cap` bytes of a stream, its first and last halves (or, `head_only`, its
/// first `cap` bytes), and counts every byte.
class output_capture {
public:
  explicit output_capture(size_t cap, bool head_only = false);
  void append(const char* data, size_t n);
  /// What was kept; where bytes were cut between head and tail a line says how many.
  std::string text() const;
  size_t total() const { return total_; }
  bool truncated() const;

private:
  size_t half_;
  bool head_only_;
  size_t total_ = 0;
  std::string head_;
  std::string tail_;
};

/// How to start a child with start_child.
struct child_spec {
  std::string program;
  /// argv[0] included.
  std::vector<std::string> argv;
  std::filesystem::path cwd;
  child_environment environment;
  /// TROUPE_PROCESS_OWNER; empty: untagged.
  std::string owner;
  /// A pipe for its stdin; else it reads /dev/null.
  bool input = false;
  /// Its stdout and stderr go to this file (created owner-only, truncated), not to pipes.
  std::filesystem::path output_file;
  /// Its stderr joins its stdout (one pipe).
  bool merge_errors = false;
  /// Becomes the child's fd 3 (see spawn_child); -1: none. The caller keeps and closes it.
  int pass_fd = -1;
};

/// A started child and the ends of its pipes its supervisor owns (-1: none).
struct started_child {
  pid_t pid = -1;
  int input = -1;
  int output = -1;
  int errors = -1;
};

/// Starts a child as `spec` says (through spawn_child); never blocks on it. Its pipes are
/// non-blocking. The error says what could not be done.
expected<started_child> start_child(const child_spec& spec);

/// How supervise_child runs a child to its end.
struct supervision {
  /// Written to the child's stdin pipe, which is then closed.
  std::string input;
  /// Bytes of stdout, and of stderr, kept (see output_capture).
  size_t output_cap = 1 << 20;
  bool head_only = false;
  /// Its group is killed after this long; 0: no limit.
  std::chrono::milliseconds timeout{0};
  /// After a kill, how long output is still read (from what left the group and holds it).
  std::chrono::milliseconds kill_grace{0};
  /// After the child has exited, how long output is still read from what it left running.
  std::chrono::milliseconds exit_grace{500};
  /// Killed (SIGKILL, with what they started) once the child has ended: what is left under
  /// this tag. Empty: nothing is.
  std::string owner;
  /// For a child that outlives each command (the session's shell): sees every chunk of
  /// stdout before the capture does, appends what belongs to the command and returns its exit
  /// code once the command is done, which ends the supervision with the child still running.
  /// Called once more with no bytes at the end of the output, to append what it held back.
  std::function<std::optional<int32_t>(std::string_view chunk, output_capture& into)> framing;
  /// For a child that talks while it runs (an MCP server): sees every chunk of stderr as it
  /// arrives, instead of the capture.
  std::function<void(std::string_view chunk)> on_errors;
};

/// How a supervised child ended.
struct child_end {
  /// The exit code (see exit_code_of), or the one framing found.
  int32_t exit_code = -1;
  /// The child has exited and was reaped here.
  bool exited = false;
  /// The command framing watched for is done; the child still runs.
  bool command_done = false;
  bool timed_out = false;
  /// Its starter said stop: its group was killed.
  bool stopped = false;
  /// Its starter went away: its group was killed, nothing more was read.
  bool abandoned = false;
  /// Output was still open when reading stopped (held by what left the group).
  bool output_held = false;
  std::string output;
  size_t output_bytes = 0;
  bool truncated = false;
  std::string errors;
  int64_t duration_ms = 0;
};

/// Runs a started child to its end. `control` is the read end of its starter's child_control:
/// a byte on it is stop, its closing is abandon. Owns and closes the child's pipes and
/// `control`. Blocks: call it off the scheduler threads.
child_end supervise_child(started_child child, const supervision& how, int control);

/// The starter's hold on a supervised child: stop() kills its group (output is still read for
/// the kill grace); dropping it abandons the child (killed, reaped, nothing more read).
class child_control {
public:
  child_control() = default;
  /// A new hold and the read end for supervise_child, or why no pipe could be made.
  static expected<std::pair<child_control, int>> make();
  child_control(child_control&& other) noexcept;
  child_control& operator=(child_control&& other) noexcept;
  child_control(const child_control&) = delete;
  child_control& operator=(const child_control&) = delete;
  ~child_control();

  void stop() const;

private:
  int fd_ = -1;
};

} // namespace troupe
