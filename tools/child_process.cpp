#include "tools/child_process.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <unordered_set>

extern char** environ;

namespace troupe {

namespace {

// The children whose starters wait for them. Process-wide because waitpid is: a reaper that
// took a status meant for a starter would leave that starter waiting for nothing. The lock is
// held across posix_spawn, so a child that exits at once is registered before anyone looks.
struct child_registry {
  std::mutex mutex;
  std::unordered_set<pid_t> waited_for;
};

child_registry& registry() {
  static child_registry instance;
  return instance;
}

// The environment the child gets: this process's, with `environment` and the owner over it.
std::vector<std::string> environment_of(const child_environment& environment,
                                        const std::string& owner) {
  std::vector<std::string> out;
  for (char* const* e = environ; e != nullptr && *e != nullptr; ++e) {
    const char* equals = std::strchr(*e, '=');
    auto name = equals != nullptr ? std::string(*e, static_cast<size_t>(equals - *e))
                                  : std::string{*e};
    if (environment.count(name) == 0 && !(name == process_owner_variable && !owner.empty()))
      out.emplace_back(*e);
  }
  for (auto& [name, value] : environment)
    out.push_back(name + "=" + value);
  if (!owner.empty())
    out.push_back(std::string{process_owner_variable} + "=" + owner);
  return out;
}

} // namespace

int spawn_child(const std::string& program, const char* const argv[],
                const child_environment& environment, const std::filesystem::path& cwd, int in,
                int out, int err, pid_t& pid, const std::string& owner) {
  auto env_text = environment_of(environment, owner);
  std::vector<char*> env;
  for (auto& e : env_text)
    env.push_back(e.data());
  env.push_back(nullptr);
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
  for (int sig : {SIGINT, SIGTERM, SIGPIPE, SIGQUIT, SIGHUP, SIGXFSZ})
    sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &empty_mask);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  // A session of its own: a process group to kill as a whole, and no controlling terminal, so
  // nothing it runs can read from or write to the user's terminal behind troupe's back.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
                                    POSIX_SPAWN_SETSIGDEF);

  int rc = 0;
  {
    auto& reg = registry();
    std::lock_guard<std::mutex> lock{reg.mutex};
    rc = posix_spawn(&pid, program.c_str(), &actions, &attr, const_cast<char**>(argv),
                     env.data());
    if (rc == 0)
      reg.waited_for.insert(pid);
  }
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return rc;
}

pid_t wait_child(pid_t pid, int& status, int options) {
  pid_t rc;
  while ((rc = ::waitpid(pid, &status, options)) < 0 && errno == EINTR) {
  }
  if (rc == pid || (rc < 0 && errno == ECHILD)) {
    auto& reg = registry();
    std::lock_guard<std::mutex> lock{reg.mutex};
    reg.waited_for.erase(pid);
  }
  return rc;
}

void reap_unclaimed(const std::vector<pid_t>& pids) {
  auto& reg = registry();
  std::lock_guard<std::mutex> lock{reg.mutex};
  for (auto pid : pids) {
    if (reg.waited_for.count(pid) != 0)
      continue;
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) < 0 && errno == EINTR) {
    }
  }
}

} // namespace troupe
