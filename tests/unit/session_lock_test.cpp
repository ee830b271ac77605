#include <doctest/doctest.h>

#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <csignal>

#include "store/session_lock.hpp"
#include "support/file_modes.hpp"
#include "support/test_support.hpp"

using namespace troupe;
using namespace troupe::test;

extern char** environ;

TEST_CASE("one process runs a session: a second lock is refused until the first is let go") {
  temp_dir dir;
  auto session = session_paths::top_level(dir.path(), "s1");
  CHECK_FALSE(session_running(session)); // never run: no lock file at all
  auto first = session_lock::take(session);
  REQUIRE(first);
  CHECK(session_running(session));
  // An open-file-description lock: a second take conflicts even within one process.
  auto second = session_lock::take(session);
  REQUIRE_FALSE(second);
  CHECK(second.error() == "session s1 is running in another process; send it a message with "
                          "troupe notify s1, or --fork it");
  CHECK(session_running(session)); // the probe asked and took nothing
  first->reset();
  CHECK_FALSE(session_running(session));
  auto third = session_lock::take(session);
  REQUIRE(third);
  CHECK(session_running(session));
}

TEST_CASE("the lock makes its session's directory private, and tightens an older one") {
  temp_dir dir;
  auto session = session_paths::top_level(dir.path(), "s2");
  std::optional<umask_guard> loose{022};
  auto lock = session_lock::take(session);
  loose.reset();
  REQUIRE(lock);
  CHECK(mode_of(session.dir()) == 0700);
  CHECK(mode_of(session.lock()) == 0600);
  lock->reset();
  std::filesystem::permissions(session.dir(), std::filesystem::perms::all);
  auto again = session_lock::take(session);
  REQUIRE(again);
  CHECK(mode_of(session.dir()) == 0700);
}

TEST_CASE("a child process started while the lock is held does not keep the session locked") {
  temp_dir dir;
  auto session = session_paths::top_level(dir.path(), "s3");
  auto lock = session_lock::take(session);
  REQUIRE(lock);
  pid_t child = 0;
  const char* argv[] = {"sleep", "30", nullptr};
  REQUIRE(::posix_spawnp(&child, "sleep", nullptr, nullptr, const_cast<char**>(argv),
                         environ) == 0);
  lock->reset();
  // The descriptor was close-on-exec: the sleeping child holds nothing.
  CHECK_FALSE(session_running(session));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

TEST_CASE("a lock that cannot be made says where and why") {
  temp_dir dir;
  write_file(dir / "home/sessions", "a file where the sessions folder should be");
  auto lock = session_lock::take(session_paths::top_level(dir / "home", "s4"));
  REQUIRE_FALSE(lock);
  CHECK(lock.error().find("cannot create " + (dir / "home/sessions/s4").string()) !=
        std::string::npos);
}
