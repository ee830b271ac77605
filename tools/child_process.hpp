#pragma once
// How troupe starts every child process (the shell tool, background tasks, hook commands): in
// a session of its own, so it has no terminal and its process group can be killed as a whole,
// with the signal mask and dispositions the CLI changed put back, and tagged with the owner
// it belongs to (TROUPE_PROCESS_OWNER), so that what it leaves behind can be found and
// stopped (tools/process_reaper). Every child started here is in a registry until its
// starter has waited for it: the reaper collects only the other children of the process.

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

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
/// wait_child.
int spawn_child(const std::string& program, const char* const argv[],
                const child_environment& environment, const std::filesystem::path& cwd, int in,
                int out, int err, pid_t& pid, const std::string& owner = "");

/// waitpid for a child started by spawn_child; once it is reaped (or is no child any more) it
/// leaves the registry. Retries on EINTR. Returns what waitpid returned.
pid_t wait_child(pid_t pid, int& status, int options = 0);

/// Reaps those of `pids` (children of this process) that no starter waits for: orphans that
/// were re-parented to this process. Never blocks.
void reap_unclaimed(const std::vector<pid_t>& pids);

} // namespace troupe
