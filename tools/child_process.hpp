#pragma once
// How troupe starts every child process (the shell tool, background tasks, hook commands): in
// a session of its own, so it has no terminal and its process group can be killed as a whole,
// with the signal mask and dispositions the CLI changed put back.

#include <sys/types.h>

#include <filesystem>
#include <string>

namespace troupe {

/// Starts `program` with `argv` in `cwd`, its stdin, stdout and stderr on the given
/// descriptors; `envp` null: this process's environment. Sets `pid` and returns 0, or returns
/// the posix_spawn error. Never blocks on the child.
int spawn_child(const std::string& program, const char* const argv[], char* const envp[],
                const std::filesystem::path& cwd, int in, int out, int err, pid_t& pid);

} // namespace troupe
