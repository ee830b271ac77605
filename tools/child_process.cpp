#include "tools/child_process.hpp"

#include <signal.h>
#include <spawn.h>

extern char** environ;

namespace troupe {

int spawn_child(const std::string& program, const char* const argv[], char* const envp[],
                const std::filesystem::path& cwd, int in, int out, int err, pid_t& pid) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in, 0);
  posix_spawn_file_actions_adddup2(&actions, out, 1);
  posix_spawn_file_actions_adddup2(&actions, err, 2);
  posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());

  // The CLI blocks SIGINT/SIGTERM/SIGHUP in every thread; a child must start with a clean
  // slate.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty_mask, defaults;
  sigemptyset(&empty_mask);
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGPIPE, SIGQUIT, SIGHUP})
    sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &empty_mask);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  // A session of its own: a process group to kill as a whole, and no controlling terminal, so
  // nothing it runs can read from or write to the user's terminal behind troupe's back.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
                                    POSIX_SPAWN_SETSIGDEF);

  int rc = posix_spawn(&pid, program.c_str(), &actions, &attr, const_cast<char**>(argv),
                       envp != nullptr ? envp : environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return rc;
}

} // namespace troupe
