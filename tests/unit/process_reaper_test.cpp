// Stopping what a unit left behind: by its owner tag, with its descendants, and nothing of
// another owner's.

#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>

#include "support/test_support.hpp"
#include "tools/child_process.hpp"
#include "tools/process_reaper.hpp"

using namespace troupe;
using namespace troupe::test;

namespace {

/// A tag no other test run shares: without a subreaper every readable process is looked at.
std::string unique(const std::string& name) {
  return "reaper-test-" + std::to_string(::getpid()) + "-" + name;
}

/// Starts `bash -c script` tagged `owner`; what it prints goes to `out`.
pid_t start(const std::string& script, const std::filesystem::path& out,
            const std::string& owner) {
  int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const char* argv[] = {"bash", "-c", script.c_str(), nullptr};
  pid_t pid = -1;
  REQUIRE(spawn_child("/bin/bash", argv, nullptr, out.parent_path(), in, fd, fd, pid, owner) ==
          0);
  ::close(in);
  ::close(fd);
  return pid;
}

/// The pids a script wrote, one a line, once there are `n` of them.
std::vector<int> pids_in(const std::filesystem::path& file, size_t n) {
  std::vector<int> pids;
  REQUIRE(wait_until([&] {
    pids.clear();
    std::ifstream in{file};
    for (int pid; in >> pid;)
      pids.push_back(pid);
    return pids.size() >= n;
  }));
  return pids;
}

bool alive(int pid) {
  auto status = read_file("/proc/" + std::to_string(pid) + "/status");
  return !status.empty() && status.find("\nState:\tZ") == std::string::npos;
}

} // namespace

TEST_CASE("stop_owned_processes kills a unit's detached processes and their children only") {
  temp_dir dir;
  auto owner = unique("session");
  // A detached sleeper with a child of its own, under the session's task unit; the parent bash
  // exits, so nothing links them to it any more.
  auto mine = start("setsid bash -c 'sleep 300 & echo $! >> pids; echo $$ >> pids; wait' "
                    ">/dev/null 2>&1 &",
                    dir / "out.txt", owner + "/task_1");
  // Another session whose name starts the same way, and the same session's own shell.
  auto other = start("setsid sleep 300 >/dev/null 2>&1 & echo $! > other", dir / "o.txt",
                     owner + "x/task_1");
  auto own_shell = start("setsid sleep 300 >/dev/null 2>&1 & echo $! > shell", dir / "s.txt",
                         owner + "/shell-1");
  int status = 0;
  for (auto pid : {mine, other, own_shell})
    wait_child(pid, status);
  auto detached = pids_in(dir / "pids", 2);
  auto other_pid = pids_in(dir / "other", 1)[0];
  auto shell_pid = pids_in(dir / "shell", 1)[0];

  CHECK(stop_owned_processes(owner + "/task_1") >= 2);
  for (int pid : detached)
    CHECK(wait_until_gone(pid, std::chrono::seconds{10}));
  CHECK(alive(other_pid));
  CHECK(alive(shell_pid));

  CHECK(stop_owned_processes(owner) >= 1); // the session: every unit of it
  CHECK(wait_until_gone(shell_pid, std::chrono::seconds{10}));
  CHECK(alive(other_pid));
  CHECK(stop_owned_processes("") == 0);
  CHECK(alive(other_pid));
  ::kill(other_pid, SIGKILL);
}
