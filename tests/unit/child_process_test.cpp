// How children start and are reaped: the owner tag in their environment, and a starter's
// status never taken by the orphan reaper.

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/test_support.hpp"
#include "tools/child_process.hpp"
#include "tools/process_reaper.hpp"

using namespace troupe;
using namespace troupe::test;

namespace {

/// Starts `bash -c script` with stdin from /dev/null and stdout/stderr into `out`.
pid_t start(const std::string& script, const std::filesystem::path& out,
            const std::string& owner = "") {
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

bool is_zombie(pid_t pid) {
  return read_file("/proc/" + std::to_string(pid) + "/status").find("\nState:\tZ") !=
         std::string::npos;
}

} // namespace

TEST_CASE("a child's environment names its owner, replacing an inherited tag") {
  temp_dir dir;
  ::setenv(process_owner_variable, "outer/shell-1", 1);
  auto pid = start("echo \"$TROUPE_PROCESS_OWNER\"", dir / "out.txt", "session-1/task_ab");
  ::unsetenv(process_owner_variable);
  int status = 0;
  CHECK(wait_child(pid, status) == pid);
  CHECK(read_file(dir / "out.txt") == "session-1/task_ab\n");
}

TEST_CASE("the orphan reaper never takes the status of a child its starter waits for") {
  temp_dir dir;
  auto pid = start("exit 7", dir / "out.txt");
  REQUIRE(wait_until([&] { return is_zombie(pid); }));
  reap_orphans(); // an exited child of this process: but its starter has not waited yet
  reap_unclaimed({pid});
  int status = 0;
  CHECK(wait_child(pid, status) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 7);
}

TEST_CASE("an exited child nobody waits for is reaped") {
  temp_dir dir;
  // A plain fork: no starter registered it, as with an orphan re-parented to this process.
  pid_t pid = ::fork();
  if (pid == 0)
    ::_exit(0);
  REQUIRE(wait_until([&] { return is_zombie(pid); }));
  reap_orphans();
  CHECK(!std::filesystem::exists("/proc/" + std::to_string(pid)));
}
