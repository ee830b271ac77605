// How children start, run and are reaped: the owner tag and the starter's variables in their
// environment, a starter's status never taken by the orphan reaper, and supervise_child's
// input, output caps, timeout, stop, abandon, exit grace, owner sweep and framing.

#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <memory>
#include <optional>
#include <thread>

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

namespace {

/// Starts `bash -c script` as the module starts every child: stdin a pipe, stdout and stderr
/// on pipes of their own (or one, `merged`), tagged `owner`.
started_child start_script(const std::string& script, const std::string& owner = "",
                           bool merged = false) {
  child_spec spec;
  spec.program = "/bin/bash";
  spec.argv = {"bash", "-c", script};
  spec.cwd = std::filesystem::temp_directory_path();
  spec.owner = owner;
  spec.input = true;
  spec.merge_errors = merged;
  auto child = start_child(spec);
  REQUIRE(child);
  return *child;
}

/// Runs a child to its end with a hold nobody uses.
child_end run_to_end(const std::string& script, supervision how = {}) {
  auto control = child_control::make();
  REQUIRE(control);
  return supervise_child(start_script(script), how, control->second);
}

} // namespace

TEST_CASE("supervise_child feeds stdin and reads stdout and stderr to the end") {
  supervision how;
  how.input = "hello\n";
  auto end = run_to_end("cat; echo oops >&2; exit 3", how);
  CHECK(end.exited);
  CHECK(end.exit_code == 3);
  CHECK(end.output == "hello\n");
  CHECK(end.errors == "oops\n");
  CHECK_FALSE(end.timed_out);
  CHECK_FALSE(end.output_held);
  // A child that never reads its input is no failure (SIGPIPE is ignored, as the CLI does).
  auto previous = std::signal(SIGPIPE, SIG_IGN);
  how.input = std::string(1 << 20, 'x');
  auto unread = run_to_end("exec 0<&-; echo done", how);
  std::signal(SIGPIPE, previous);
  CHECK(unread.exit_code == 0);
  CHECK(unread.output == "done\n");
}

TEST_CASE("supervise_child kills the whole group at the timeout and reaps the child") {
  temp_dir dir;
  supervision how;
  how.timeout = std::chrono::milliseconds{300};
  auto started = std::chrono::steady_clock::now();
  auto end = run_to_end("sleep 30 & echo $! > '" + (dir / "child.pid").string() + "'; wait", how);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds{5});
  CHECK(end.timed_out);
  CHECK(end.exited);
  CHECK(end.exit_code == 137);
  CHECK(wait_until_gone(std::stoi(read_file(dir / "child.pid"))));
}

TEST_CASE("supervise_child: stop kills the group, dropping the hold abandons the child") {
  temp_dir dir;
  for (bool drop : {false, true}) {
    CAPTURE(drop);
    auto pid_file = dir / ("child" + std::to_string(drop) + ".pid");
    auto control = child_control::make();
    REQUIRE(control);
    auto child = start_script("sleep 30 & echo $! > '" + pid_file.string() + "'; echo up; wait");
    auto hold = std::make_unique<child_control>(std::move(control->first));
    std::thread stopper{[&] {
      // Once the child is up (no REQUIRE here: doctest's checks belong to the test's thread).
      for (int i = 0; i < 500 && !(std::filesystem::exists(pid_file) &&
                                   !read_file(pid_file).empty());
           ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds{10});
      if (drop)
        hold.reset();
      else
        hold->stop();
    }};
    auto end = supervise_child(child, supervision{}, control->second);
    stopper.join();
    CHECK(end.stopped == !drop);
    CHECK(end.abandoned == drop);
    CHECK(end.exited);
    CHECK(end.exit_code == 137);
    CHECK(wait_until_gone(std::stoi(read_file(pid_file))));
  }
}

TEST_CASE("supervise_child keeps head and tail within its cap, or the head alone") {
  supervision how;
  how.output_cap = 1000;
  auto both = run_to_end("head -c 100000 /dev/zero | tr '\\0' a; echo; echo END", how);
  CHECK(both.truncated);
  CHECK(both.output_bytes == 100005);
  CHECK(both.output.find("bytes of output cut; 100005 bytes in all") != std::string::npos);
  CHECK(both.output.size() < 1100);
  CHECK(both.output.substr(both.output.size() - 4) == "END\n");
  how.head_only = true;
  auto head = run_to_end("head -c 100000 /dev/zero | tr '\\0' a; echo END", how);
  CHECK(head.truncated);
  CHECK(head.output == std::string(1000, 'a'));
}

TEST_CASE("supervise_child answers when the child exits, though what it left holds the output") {
  temp_dir dir;
  supervision how;
  how.exit_grace = std::chrono::milliseconds{200};
  auto started = std::chrono::steady_clock::now();
  auto end = run_to_end("sleep 5 & echo $! > '" + (dir / "left.pid").string() + "'; echo hi",
                        how);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds{3});
  CHECK(end.exit_code == 0);
  CHECK(end.output == "hi\n");
  CHECK(end.output_held);
  ::kill(std::stoi(read_file(dir / "left.pid")), SIGKILL);
}

TEST_CASE("supervise_child kills what the child left under its tag once it has ended") {
  temp_dir dir;
  auto owner = "child-test-" + std::to_string(::getpid());
  auto control = child_control::make();
  REQUIRE(control);
  supervision how;
  how.owner = owner;
  // Out of its group and session, its output elsewhere: only the tag finds it.
  auto end = supervise_child(
    start_script("setsid sleep 30 >/dev/null 2>&1 < /dev/null & echo $! > '" +
                   (dir / "detached.pid").string() + "'",
                 owner),
    how, control->second);
  CHECK(end.exit_code == 0);
  CHECK(wait_until_gone(std::stoi(read_file(dir / "detached.pid"))));
}

TEST_CASE("supervise_child with framing ends with the command, the child still running") {
  auto control = child_control::make();
  REQUIRE(control);
  auto child = start_script("read -r line; echo \"got $line\"; echo DONE 4; sleep 30", "", true);
  supervision how;
  how.input = "x\n";
  how.framing = [](std::string_view chunk, output_capture& into) -> std::optional<int32_t> {
    auto at = chunk.find("DONE ");
    into.append(chunk.data(), std::min(at, chunk.size()));
    if (at == std::string_view::npos)
      return std::nullopt;
    return std::atoi(std::string{chunk.substr(at + 5)}.c_str());
  };
  auto end = supervise_child(child, how, control->second);
  CHECK(end.command_done);
  CHECK_FALSE(end.exited);
  CHECK(end.exit_code == 4);
  CHECK(end.output == "got x\n");
  ::kill(-child.pid, SIGKILL);
  int status = 0;
  CHECK(wait_child(child.pid, status) == child.pid);
}
