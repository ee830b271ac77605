// How children start and are reaped: the owner tag and the starter's variables in their
// environment, and a starter's status never taken by the orphan reaper.

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>

#include "support/test_support.hpp"
#include "tools/child_process.hpp"
#include "tools/process_reaper.hpp"

using namespace troupe;
using namespace troupe::test;

namespace {


bool is_zombie(pid_t pid) {
  return read_file("/proc/" + std::to_string(pid) + "/status").find("\nState:\tZ") !=
         std::string::npos;
}

} // namespace

TEST_CASE("a child's environment names its owner, replacing an inherited tag") {
  temp_dir dir;
  ::setenv(process_owner_variable, "outer/shell-1", 1);
  auto pid = start_bash("echo \"$TROUPE_PROCESS_OWNER\"", dir / "out.txt", "session-1/task_ab");
  ::unsetenv(process_owner_variable);
  int status = 0;
  CHECK(wait_child(pid, status) == pid);
  CHECK(read_file(dir / "out.txt") == "session-1/task_ab\n");
}

TEST_CASE("a child gets its starter's variables over the inherited ones, troupe's stay as they were") {
  temp_dir dir;
  const char* home = std::getenv("TROUPE_HOME");
  std::optional<std::string> home_before = home ? std::optional<std::string>{home} : std::nullopt;
  ::setenv("TROUPE_SESSION_ID", "inherited", 1);
  auto pid = start_bash("echo \"$TROUPE_SESSION_ID $TROUPE_HOME $PATH\"", dir / "out.txt", "",
                        {{"TROUPE_SESSION_ID", "agent_abc123"}, {"TROUPE_HOME", "/h"}});
  int status = 0;
  CHECK(wait_child(pid, status) == pid);
  CHECK(read_file(dir / "out.txt") ==
        "agent_abc123 /h " + std::string{std::getenv("PATH")} + "\n");
  CHECK(std::string{std::getenv("TROUPE_SESSION_ID")} == "inherited");
  home = std::getenv("TROUPE_HOME");
  CHECK((home ? std::optional<std::string>{home} : std::nullopt) == home_before);
  ::unsetenv("TROUPE_SESSION_ID");
}

TEST_CASE("the orphan reaper never takes the status of a child its starter waits for") {
  temp_dir dir;
  auto pid = start_bash("exit 7", dir / "out.txt");
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

