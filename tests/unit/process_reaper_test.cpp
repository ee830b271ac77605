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
  auto mine = start_bash("setsid bash -c 'sleep 300 & echo $! >> pids; echo $$ >> pids; wait' "
                    ">/dev/null 2>&1 &",
                    dir / "out.txt", owner + "/task_1");
  // Another session whose name starts the same way, and the same session's own shell.
  auto other = start_bash("setsid sleep 300 >/dev/null 2>&1 & echo $! > other", dir / "o.txt",
                     owner + "x/task_1");
  auto own_shell = start_bash("setsid sleep 300 >/dev/null 2>&1 & echo $! > shell", dir / "s.txt",
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
