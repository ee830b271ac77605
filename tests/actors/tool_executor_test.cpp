// The tool executor: real child processes, timeouts, output caps, persistence between calls.

#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <set>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/disk_io.hpp"
#include "actors/tool_executor.hpp"
#include "support/test_support.hpp"
#include "tools/shell.hpp"

using namespace troupe;
using namespace troupe::test;
using nlohmann::json;

namespace {

struct executor_fixture {
  temp_dir dir;
  actor_system_fixture actors;
  tool_context context;
  tool_executor_actor executor;

  explicit executor_fixture(size_t output_cap = 30000, size_t capture_cap = 10 << 20,
                            std::string owner = "",
                            std::chrono::milliseconds shell_idle_stop = {},
                            bool start_shell_early = false) {
    context.cwd = dir.path();
    context.shell_idle_stop = shell_idle_stop;
    context.start_shell_early = start_shell_early;
    context.process_owner = std::move(owner);
    context.output_cap = output_cap;
    context.capture_cap = capture_cap;
    context.results_dir = dir / "results";
    executor = spawn_tool_executor(actors.sys(),
                                   std::make_shared<const tool_registry>(make_builtin_registry()),
                                   context, spawn_disk_io(actors.sys()));
  }

  ~executor_fixture() { caf::anon_send_exit(executor, caf::exit_reason::user_shutdown); }

  tool_result run(const std::string& name, json input, const std::string& id = "call_1") {
    caf::scoped_actor self{actors.sys()};
    tool_result out;
    tool_call call{id, name, std::move(input), call_format::native};
    self->request(executor, std::chrono::seconds{30}, execute_atom::value, call)
      .receive([&](tool_result& r) { out = std::move(r); },
               [&](caf::error& e) { FAIL("execute failed: " << actors.sys().render(e)); });
    return out;
  }

  tool_result shell(const std::string& command) { return run("shell", {{"command", command}}); }
};

} // namespace

TEST_CASE("shell captures stdout and stderr with the exit code") {
  executor_fixture f;
  auto r = f.shell("echo out; echo err >&2; exit 4");
  CHECK(r.exit_code == 4);
  CHECK(r.is_error);
  CHECK(r.output.find("out\n") != std::string::npos);
  CHECK(r.output.find("err\n") != std::string::npos);
  CHECK(r.output.find("[exit code 4]") != std::string::npos);
  auto ok = f.shell("printf done");
  CHECK(ok == tool_result{"done", false, 0, false});
}

TEST_CASE("shell keeps the working directory and exported variables between calls") {
  executor_fixture f;
  std::filesystem::create_directories(f.dir / "sub");
  CHECK_FALSE(f.shell("cd sub && export GREETING=hello && LOCAL=1").is_error);
  auto r = f.shell("pwd; echo \"$GREETING\"");
  CHECK(r.output == (std::filesystem::canonical(f.dir / "sub")).string() + "\nhello\n");
}

TEST_CASE("shell state that shrinks leaves nothing stale behind") {
  executor_fixture f;
  std::filesystem::create_directories(f.dir / "a/a_rather_long_directory_name");
  f.shell("cd a/a_rather_long_directory_name && export LONG_VALUE=" + std::string(500, 'v'));
  f.shell("cd .. && unset LONG_VALUE");
  auto r = f.shell("pwd; echo \"${LONG_VALUE-unset}\"");
  CHECK(r.output == std::filesystem::canonical(f.dir / "a").string() + "\nunset\n");
}

TEST_CASE("one bash serves the session: functions and plain variables persist") {
  executor_fixture f;
  CHECK_FALSE(f.shell("greet() { echo \"hi $1\"; }; PLAIN=kept").is_error);
  CHECK(f.shell("greet you; echo $PLAIN").output == "hi you\nkept\n");
}

TEST_CASE("a shell idle past shell_idle_stop is stopped, and the next command says it is new") {
  using namespace std::chrono_literals;
  executor_fixture f{30000, 10 << 20, "idle-test", 150ms};
  auto alive = [](long pid) { return ::kill(static_cast<pid_t>(pid), 0) == 0; };
  auto first = f.shell("export KEPT=yes; echo $$");
  auto bash_pid = std::stol(first.output);
  CHECK(f.shell("echo ${KEPT-unset}").output == "yes\n"); // used again in time: kept
  // Idle now: the timer of the last command stops bash.
  for (int i = 0; i < 200 && alive(bash_pid); ++i)
    std::this_thread::sleep_for(10ms);
  CHECK_FALSE(alive(bash_pid));
  auto next = f.shell("echo ${KEPT-unset}");
  CHECK(next.output.rfind("[the shell had been idle for 150 ms and was stopped: this command ran "
                          "in a new one", 0) == 0);
  CHECK(next.output.find("\nunset\n") != std::string::npos);
  // Said once: the command after it runs in the new shell as usual.
  CHECK(f.shell("echo again").output == "again\n");
  // A shell with a job of its own running is not idle: it stays, and so does the job.
  auto with_job = f.shell("sleep 30 & echo $$");
  auto busy_pid = std::stol(with_job.output);
  std::this_thread::sleep_for(600ms);
  CHECK(alive(busy_pid));
  CHECK(f.shell("jobs | wc -l").output == "1\n");
}

TEST_CASE("a shell that exits or is killed is started again for the next command") {
  executor_fixture f;
  f.shell("cd / && X=1");
  auto exited = f.shell("echo bye; exit 5");
  CHECK(exited.exit_code == 5);
  CHECK(exited.output.rfind("bye\n", 0) == 0);
  CHECK(exited.output.find("the shell exited") != std::string::npos);
  auto fresh = f.shell("pwd; echo \"${X-unset}\"");
  CHECK(fresh.output == std::filesystem::canonical(f.dir.path()).string() + "\nunset\n");
  auto killed = f.run("shell", {{"command", "sleep 30"}, {"timeout", 0.2}});
  CHECK(killed.exit_code == 137);
  CHECK(killed.output.find("the shell was killed with it; the next command starts a new one") !=
        std::string::npos);
  CHECK(f.shell("echo alive").output == "alive\n");
}

TEST_CASE("a syntax error or a fake end marker cannot break the framing") {
  executor_fixture f;
  auto bad = f.shell("echo 'unterminated");
  CHECK(bad.is_error);
  CHECK(bad.output.find("unexpected EOF") != std::string::npos);
  CHECK(f.shell("printf '\\n__TROUPE_DONE_x 0\\n'; echo after").output ==
        "\n__TROUPE_DONE_x 0\nafter\n");
  CHECK(f.shell("echo 'no newline at the end' | tr -d '\\n'").output ==
        "no newline at the end");
}

TEST_CASE("a process substitution does not take the end marker's descriptor") {
  executor_fixture f;
  // bash gives a process substitution fd 63 and closes it after the command.
  auto one = f.shell("cat <(echo hi)");
  CHECK_FALSE(one.is_error);
  CHECK(one.output == "hi\n");
  CHECK(f.shell("diff <(echo a) <(echo a) && echo same").output == "same\n");
}

TEST_CASE("set -e and a redirected stdout in one command do not break the next") {
  executor_fixture f;
  CHECK_FALSE(f.shell("set -euo pipefail; echo strict").is_error);
  CHECK(f.shell("echo still here").output == "still here\n");
  CHECK_FALSE(f.shell("exec >log.txt 2>&1; echo to-log").is_error);
  auto after = f.shell("echo after-exec");
  CHECK(after.exit_code == 0);
  CHECK(read_file(f.dir / "log.txt").find("to-log") != std::string::npos);
}

TEST_CASE("a killed command whose escaped child holds the output is given up on") {
  executor_fixture f;
  auto start = std::chrono::steady_clock::now();
  auto r = f.run("shell", {{"command", "setsid sleep 30 & echo $! > escaped.pid; sleep 30"},
                           {"timeout", 0.3}});
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds{5});
  CHECK(r.is_error);
  CHECK(r.output.find("timed out") != std::string::npos);
  CHECK(r.output.find("still holds its output") != std::string::npos);
  CHECK(f.shell("echo next").output == "next\n");
  ::kill(std::stoi(read_file(f.dir / "escaped.pid")), SIGKILL);
}

TEST_CASE("the shell has no controlling terminal") {
  executor_fixture f;
  auto r = f.shell("cat /dev/tty");
  CHECK(r.is_error);
  CHECK(r.exit_code != 0);
}

TEST_CASE("shell standard input is empty, so reading it does not hang") {
  executor_fixture f;
  auto r = f.shell("cat; echo after");
  CHECK(r.output == "after\n");
}

TEST_CASE("shell timeout kills the whole process group") {
  executor_fixture f;
  auto start = std::chrono::steady_clock::now();
  auto r = f.run("shell", {{"command", "sleep 30 & echo $! > child.pid; sleep 30"},
                           {"timeout", 0.3}});
  auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(elapsed < std::chrono::seconds{5});
  CHECK(r.is_error);
  CHECK(r.exit_code == 137);
  CHECK(r.output.find("timed out after 0.3 s") != std::string::npos);
  // The background grandchild went down with its group (at most a zombie awaiting init).
  CHECK(wait_until_gone(std::stoi(read_file(f.dir / "child.pid"))));
}

TEST_CASE("a result over the budget keeps head and tail, the whole output saved") {
  executor_fixture f{1000};
  auto r = f.shell("echo START; head -c 50000 /dev/zero | tr '\\0' x; echo; echo END");
  CHECK(r.truncated);
  CHECK_FALSE(r.is_error);
  CHECK(r.output.size() < 1300);
  CHECK(r.output.rfind("START", 0) == 0);
  CHECK(r.output.find("END\n") != std::string::npos);
  auto saved = f.dir / "results/call_1.txt";
  CHECK(r.output.find("bytes cut from the middle of 50011; the whole output is in " +
                      saved.string()) != std::string::npos);
  auto whole = read_file(saved);
  CHECK(whole.size() == 50011);
  CHECK(whole.rfind("START\n", 0) == 0);

  // Function tools get the same budget.
  write_file(f.dir / "big.txt", std::string(3000, 'y') + "\n");
  auto read = f.run("read", {{"path", "big.txt"}});
  CHECK(read.truncated);
  // The same id again (a server that reuses ids): a file of its own, the first one kept.
  auto second = f.dir / "results/call_1_2.txt";
  CHECK(read.output.find("the whole output is in " + second.string()) != std::string::npos);
  CHECK(read_file(second).find(std::string(3000, 'y')) != std::string::npos);
  CHECK(read_file(saved).size() == 50011);
  // An id longer than a file name may be still has its output saved.
  auto long_id = f.run("read", {{"path", "big.txt"}}, std::string(300, 'i'));
  CHECK(long_id.output.find("the whole output is in " + (f.dir / "results").string() + "/" +
                            std::string(200, 'i') + ".txt") != std::string::npos);
}

TEST_CASE("output past the capture cap keeps its head and tail in the saved file too") {
  executor_fixture f{1000, 20000};
  auto r = f.shell("echo START; head -c 100000 /dev/zero | tr '\\0' x; echo; echo END");
  CHECK(r.truncated);
  auto whole = read_file(f.dir / "results/call_1.txt");
  CHECK(whole.size() < 20200);
  CHECK(whole.find("bytes of output cut; 100011 bytes in all") != std::string::npos);
  CHECK(whole.find("END\n") != std::string::npos);
}

TEST_CASE("a background job holding the output pipe does not hold up the result") {
  executor_fixture f;
  auto start = std::chrono::steady_clock::now();
  auto r = f.shell("sleep 3 & echo started");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds{2});
  CHECK(r.output == "started\n");
}

TEST_CASE("unknown tools and bad arguments are error results, not failures") {
  executor_fixture f;
  auto unknown = f.run("fly", json::object());
  CHECK(unknown.is_error);
  CHECK(unknown.output == "unknown tool 'fly'; available tools: shell, read, write, edit, patch, glob, grep, ls, task_output, task_stop, todo, complete, task, task_wait");
  auto missing = f.run("write", {{"path", "x.txt"}});
  CHECK(missing.is_error);
  CHECK(missing.output == "tool 'write' needs the argument 'content'");
  auto wrong_type = f.run("read", {{"path", 42}});
  CHECK(wrong_type.is_error);
  CHECK(wrong_type.output.find("must be of type string") != std::string::npos);
  auto extra = f.run("read", {{"path", "a"}, {"colour", "red"}});
  CHECK(extra.output == "tool 'read' has no argument 'colour'");
}

namespace {

std::string task_id_of(const tool_result& started) {
  auto at = started.output.find("task_");
  REQUIRE(at != std::string::npos);
  return started.output.substr(at, started.output.find(' ', at) - at);
}

int pid_of(const tool_result& started) {
  auto at = started.output.find("(pid ");
  REQUIRE(at != std::string::npos);
  return std::stoi(started.output.substr(at + 5));
}

} // namespace

TEST_CASE("a background command returns its task id at once, task_output waits for it") {
  executor_fixture f;
  auto begin = std::chrono::steady_clock::now();
  auto started = f.run("shell", {{"command", "echo first; sleep 0.5; echo second; exit 3"},
                                 {"run_in_background", true}});
  CHECK(std::chrono::steady_clock::now() - begin < std::chrono::milliseconds{400});
  CHECK_FALSE(started.is_error);
  auto id = task_id_of(started);

  auto now = f.run("task_output", {{"task_id", id}, {"block", false}});
  CHECK(now.output.find("still running") != std::string::npos);

  auto done = f.run("task_output", {{"task_id", id}});
  CHECK(done.output.find("exited with code 3") != std::string::npos);
  CHECK(done.output.find("first\nsecond\n") != std::string::npos);
  CHECK(done.exit_code == 3);
  CHECK(done.is_error);
  // The session's own shell was never involved: it is free meanwhile.
  CHECK(f.shell("echo free").output == "free\n");
}

TEST_CASE("task_output stops waiting after its timeout, task_stop kills the task's group") {
  executor_fixture f;
  auto started = f.run("shell", {{"command", "sleep 30 & echo $! > child.pid; echo up; wait"},
                                 {"run_in_background", true}});
  auto id = task_id_of(started);
  auto begin = std::chrono::steady_clock::now();
  auto waited = f.run("task_output", {{"task_id", id}, {"timeout", 0.3}});
  CHECK(std::chrono::steady_clock::now() - begin >= std::chrono::milliseconds{250});
  CHECK(waited.output.find("still running") != std::string::npos);
  CHECK(waited.output.find("up\n") != std::string::npos);

  auto stopped = f.run("task_stop", {{"task_id", id}});
  CHECK(stopped.output.find("stopped by task_stop") != std::string::npos);
  CHECK(wait_until_gone(pid_of(started)));
  CHECK(wait_until_gone(std::stoi(read_file(f.dir / "child.pid"))));
  auto after = f.run("task_output", {{"task_id", id}});
  CHECK(after.output.find("stopped by task_stop") != std::string::npos);

  auto unknown = f.run("task_output", {{"task_id", "task_nope"}});
  CHECK(unknown.is_error);
  CHECK(unknown.output.find("tasks: " + id) != std::string::npos);
}

TEST_CASE("task_output reads a large log's head and tail only, within the budget") {
  executor_fixture f{2000};
  auto started = f.run("shell", {{"command", "echo START; head -c 50000000 /dev/zero | tr '\\0' a; "
                                             "echo; echo END"},
                                 {"run_in_background", true}});
  auto done = f.run("task_output", {{"task_id", task_id_of(started)}});
  CHECK(done.output.find("exited with code 0") != std::string::npos);
  CHECK(done.output.find("START\n") != std::string::npos);
  CHECK(done.output.find("bytes of the log left out; 50000011 bytes in all") !=
        std::string::npos);
  CHECK(done.output.substr(done.output.size() - 4) == "END\n");
  CHECK(done.output.size() <= 2000);
}

TEST_CASE("background tasks end with the executor") {
  int pid = 0;
  {
    executor_fixture f;
    pid = pid_of(f.run("shell", {{"command", "sleep 30"}, {"run_in_background", true}}));
  }
  CHECK(wait_until_gone(pid));
}

TEST_CASE("a cancel or the executor's end tells a running scan to stop") {
  for (bool by_cancel : {true, false}) {
    CAPTURE(by_cancel);
    temp_dir dir;
    actor_system_fixture actors;
    auto started = std::make_shared<std::atomic<bool>>(false);
    auto stopped_early = std::make_shared<std::atomic<bool>>(false);
    tool_spec spin;
    spin.name = "spin";
    spin.read_only = true;
    spin.kind = tool_kind::scan;
    // Stands for a long walk: it runs until told to stop, or 20 s as a hang guard.
    spin.run = [=](const json&, const tool_context& ctx) {
      started->store(true);
      auto until = std::chrono::steady_clock::now() + std::chrono::seconds{20};
      while (!cancel_requested(ctx) && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds{5});
      stopped_early->store(cancel_requested(ctx));
      return tool_result{};
    };
    tool_context context;
    context.cwd = dir.path();
    auto executor = spawn_tool_executor(
      actors.sys(), std::make_shared<const tool_registry>(std::vector<tool_spec>{spin}), context,
      spawn_disk_io(actors.sys()));
    caf::anon_send(executor, execute_atom::value, tool_call{"c1", "spin", json::object()});
    REQUIRE(wait_until([&] { return started->load(); }, std::chrono::seconds{10}));
    if (by_cancel)
      caf::anon_send(executor, cancel_atom::value);
    else
      caf::anon_send_exit(executor, caf::exit_reason::user_shutdown);
    CHECK(wait_until([&] { return stopped_early->load(); }, std::chrono::seconds{10}));
    caf::anon_send_exit(executor, caf::exit_reason::user_shutdown);
  }
}

namespace {

/// A tag no other test run shares: the sweeps look at every process this user may read.
std::string unique_owner() { return "executor-test-" + std::to_string(::getpid()) + "-" +
                                    std::to_string(std::chrono::steady_clock::now()
                                                     .time_since_epoch().count()); }

bool alive(int pid) {
  auto status = read_file("/proc/" + std::to_string(pid) + "/status");
  return !status.empty() && status.find("\nState:\tZ") == std::string::npos;
}

} // namespace

TEST_CASE("what the session's shell detached runs until the executor ends, then goes") {
  int pid = 0;
  {
    executor_fixture f{30000, 10 << 20, unique_owner()};
    pid = std::stoi(f.shell("setsid sleep 30 >/dev/null 2>&1 & echo $!").output);
    CHECK(f.shell("echo next").output == "next\n");
    CHECK(alive(pid)); // started with `&` in this session: it is the session's until its end
  }
  CHECK(wait_until_gone(pid, std::chrono::seconds{10}));
  ::kill(pid, SIGKILL);
}

TEST_CASE("a timed-out command takes what it detached from its group with it") {
  executor_fixture f{30000, 10 << 20, unique_owner()};
  auto r = f.run("shell", {{"command", "setsid sleep 30 >/dev/null 2>&1 & echo $! > escaped.pid; "
                                       "sleep 30"},
                           {"timeout", 0.3}});
  CHECK(r.output.find("timed out") != std::string::npos);
  auto pid = std::stoi(read_file(f.dir / "escaped.pid"));
  CHECK(wait_until_gone(pid, std::chrono::seconds{10}));
  ::kill(pid, SIGKILL);
}

TEST_CASE("task_stop also stops what the task detached from its group") {
  executor_fixture f{30000, 10 << 20, unique_owner()};
  auto started = f.run("shell", {{"command", "setsid sleep 30 >/dev/null 2>&1 & "
                                             "echo $! > detached.pid; wait"},
                                 {"run_in_background", true}});
  REQUIRE(wait_until([&] { return !read_file(f.dir / "detached.pid").empty(); }));
  auto pid = std::stoi(read_file(f.dir / "detached.pid"));
  CHECK(alive(pid));
  f.run("task_stop", {{"task_id", task_id_of(started)}});
  CHECK(wait_until_gone(pid, std::chrono::seconds{10}));
  ::kill(pid, SIGKILL);
}

TEST_CASE("a file tool holds its path to where the permission check found it to lead") {
  // A link swapped in after the decision (a background task, another process, a person
  // answering slowly) is refused, never followed.
  executor_fixture f;
  namespace fs = std::filesystem;
  auto work = f.dir.path();
  auto outside = f.dir / "outside";
  fs::create_directories(outside);
  fs::create_directories(work / "inside");
  fs::create_directories(work / "secret");
  write_file(outside / "victim.txt", "original\n");
  write_file(work / "secret/key.txt", "SECRET=hunter2\n");
  write_file(work / "mine.txt", "original\n");
  write_file(work / "notes.txt", "notes\n");
  auto held = [&](const std::string& name, json input, const fs::path& approved) {
    caf::scoped_actor self{f.actors.sys()};
    tool_result out;
    tool_call call{"call_1", name, std::move(input), call_format::native};
    call.approved_path = approved.string();
    self->request(f.executor, std::chrono::seconds{30}, execute_atom::value, call)
      .receive([&](tool_result& r) { out = std::move(r); },
               [&](caf::error& e) { FAIL("execute failed: " << f.actors.sys().render(e)); });
    return out;
  };
  // Each was allowed where it led then; the link is swapped in since.
  fs::create_symlink(outside, work / "link");
  auto written = held("write", {{"path", "link/new.txt"}, {"content", "escaped"}},
                      work / "inside/new.txt");
  fs::remove(work / "mine.txt");
  fs::create_symlink(outside / "victim.txt", work / "mine.txt");
  auto edited = held("edit",
                     {{"path", "mine.txt"}, {"old_string", "original"}, {"new_string", "edited"}},
                     work / "mine.txt");
  fs::remove(work / "notes.txt");
  fs::create_symlink(work / "secret/key.txt", work / "notes.txt");
  auto read = held("read", {{"path", "notes.txt"}}, work / "notes.txt");
  CHECK_FALSE(fs::exists(outside / "new.txt"));
  CHECK(read_file(outside / "victim.txt") == "original\n");
  for (auto* result : {&written, &edited, &read}) {
    CAPTURE(result->output);
    CHECK(result->is_error);
    CHECK(result->output.find("as when it was allowed (a link changed meanwhile)") !=
          std::string::npos);
    CHECK(result->output.find("hunter2") == std::string::npos);
  }
}

namespace {

// This process's shell reader threads (actors/tool_executor.cpp names them).
std::set<std::string> readers() {
  std::set<std::string> ids;
  for (auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm{task.path() / "comm"};
    std::string name;
    if (std::getline(comm, name) && name == "shell.reader")
      ids.insert(task.path().filename().string());
  }
  return ids;
}

std::set<std::string> thread_ids() {
  std::set<std::string> ids;
  for (auto& task : std::filesystem::directory_iterator("/proc/self/task"))
    ids.insert(task.path().filename().string());
  return ids;
}

} // namespace

TEST_CASE("the disk actor starts its flushing thread with its first flush, not before") {
  using namespace std::chrono_literals;
  actor_system_fixture actors;
  temp_dir dir;
  auto before = thread_ids();
  auto disk = spawn_disk_io(actors.sys());
  auto added = [&before] {
    size_t count = 0;
    for (auto& id : thread_ids())
      count += before.count(id) == 0 ? 1 : 0;
    return count;
  };
  std::this_thread::sleep_for(100ms);
  CHECK(added() == 1); // the disk actor's own thread: no flushing thread yet
  int fd = ::open((dir / "flushed").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  caf::anon_send(disk, sync_atom::value, static_cast<int32_t>(fd));
  bool closed = false;
  for (int i = 0; i < 200 && !closed; ++i) {
    closed = ::fcntl(fd, F_GETFD) == -1; // the flushing thread closes it after its fsync
    if (!closed)
      std::this_thread::sleep_for(10ms);
  }
  CHECK(closed);
  CHECK(added() == 2);
  caf::anon_send_exit(disk, caf::exit_reason::user_shutdown);
}

TEST_CASE("the shell starts when the session asks with its first request (start_atom), once, "
          "before its first command, and serves it") {
  using namespace std::chrono_literals;
  auto before = children_named("bash");
  executor_fixture f{30000, 10 << 20, "", {}, true};
  // Not with the executor: beside the first request it would take a core from it.
  std::this_thread::sleep_for(300ms);
  CHECK(children_named("bash") == before);
  caf::anon_send(f.executor, start_atom::value);
  caf::anon_send(f.executor, start_atom::value); // a second word starts no second shell
  auto started = await_new_children_named("bash", before, 3s, 200ms);
  REQUIRE(started.size() == 1);
  CHECK(f.shell("echo $$").output == std::to_string(*started.begin()) + "\n");
}

TEST_CASE("the shell is started ahead once: a late word after it stopped for being idle starts "
          "no other") {
  using namespace std::chrono_literals;
  auto before = children_named("bash");
  executor_fixture f{30000, 10 << 20, "", 150ms, true};
  caf::anon_send(f.executor, start_atom::value);
  CHECK(f.shell("echo used").output == "used\n");
  auto gone = [&] { return new_children_named("bash", before).empty(); };
  for (int i = 0; i < 300 && !gone(); ++i)
    std::this_thread::sleep_for(10ms);
  REQUIRE(gone()); // stopped for being idle
  caf::anon_send(f.executor, start_atom::value); // e.g. from a step started again by /model
  std::this_thread::sleep_for(300ms);
  CHECK(gone());
  auto r = f.shell("echo again");
  CHECK(r.output.find("again\n") != std::string::npos); // the command starts a new one
}

TEST_CASE("an executor not asked to start its shell early (a subagent's, a fleet task's) "
          "starts it on first use") {
  using namespace std::chrono_literals;
  auto before = children_named("bash");
  executor_fixture f;
  caf::anon_send(f.executor, start_atom::value);
  std::this_thread::sleep_for(300ms);
  CHECK(children_named("bash") == before);
  CHECK(f.shell("echo used").output == "used\n");
}

TEST_CASE("a shell started ahead that died before its first command is replaced, unnoticed") {
  using namespace std::chrono_literals;
  auto before = children_named("bash");
  executor_fixture f{30000, 10 << 20, "", {}, true};
  caf::anon_send(f.executor, start_atom::value);
  auto started = await_new_children_named("bash", before);
  REQUIRE(!started.empty());
  long warm = *started.begin();
  ::kill(static_cast<pid_t>(warm), SIGKILL);
  std::this_thread::sleep_for(50ms);
  auto r = f.shell("echo fine; echo $$");
  CHECK_FALSE(r.is_error);
  CHECK(r.output.rfind("fine\n", 0) == 0);
  CHECK(r.output != "fine\n" + std::to_string(warm) + "\n");
}

TEST_CASE("one reader thread serves every command: none is started per command") {
  using namespace std::chrono_literals;
  executor_fixture f;
  f.shell("true");
  auto during = [&] {
    std::atomic<long> caller{0};
    auto running = std::async(std::launch::async, [&] {
      caller = ::syscall(SYS_gettid);
      return f.shell("sleep 0.4; echo done");
    });
    std::this_thread::sleep_for(200ms);
    auto ids = thread_ids();
    ids.erase(std::to_string(caller.load())); // the caller's own thread is new each time
    CHECK(running.get().output == "done\n");
    return ids;
  };
  auto first = during();
  auto second = during();
  auto third = during();
  CHECK(first == second);
  CHECK(second == third);
}

TEST_CASE("no command takes the framing's loop apart, and declarations outlive their command") {
  std::signal(SIGPIPE, SIG_IGN); // as troupe's main does: a dead shell's pipe is an EPIPE
  executor_fixture f;
  // The loop calls read, eval and printf as builtins: functions by those names change nothing.
  CHECK(f.shell("read() { :; }; eval() { :; }; printf() { :; }; echo defined").output ==
        "defined\n");
  CHECK(f.shell("echo next; unset -f read eval printf").output == "next\n");
  // A bare break or continue ends the command, not the loop that reads the next one.
  auto broke = f.run("shell", {{"command", "echo before; break; echo after"}, {"timeout", 10}});
  CHECK(broke.output == "before\n");
  CHECK_FALSE(broke.is_error);
  auto continued = f.run("shell", {{"command", "echo one; continue; echo two"}, {"timeout", 10}});
  CHECK(continued.output == "one\n");
  CHECK(f.shell("for i in 1 2 3; do echo $i; [ $i = 2 ] && break; done").output == "1\n2\n");
  CHECK_FALSE(f.shell("declare -a LIST=(a b); declare -i N=3; local_fn() { :; }").is_error);
  CHECK(f.shell("echo ${LIST[1]} $N; type -t local_fn").output == "b 3\nfunction\n");
  // Leaving the loop ends the shell: its next command runs in a new one, never as the old
  // shell's script (where the bytes of the command after it would run as commands).
  auto pid = f.shell("echo $$").output;
  auto left = f.run("shell", {{"command", "echo leaving; break 2"}, {"timeout", 10}});
  CHECK(left.output.find("leaving\n") == 0);
  CHECK(left.output.find("timed out") == std::string::npos);
  auto fresh = f.run("shell", {{"command", "echo fresh; echo $$"}, {"timeout", 10}});
  CHECK(fresh.output.rfind("fresh\n", 0) == 0);
  CHECK(fresh.output != "fresh\n" + pid);
  CHECK(f.shell("echo ${LIST[1]}-gone").output == "-gone\n"); // a new shell: the old state is gone
  // Builtins a command disabled are enabled again, attributes it gave the loop's variables
  // dropped (declare -i would read the next count as octal), a nameref taken apart.
  CHECK(f.shell("enable -n eval printf read; echo off").output == "off\n");
  auto redefined = f.run("shell", {{"command", "__troupe_end() { :; }; echo tried"}, {"timeout", 10}});
  CHECK(redefined.output.find("readonly") != std::string::npos);
  CHECK(f.shell("echo still").output == "still\n");
  CHECK(f.shell("declare -i __troupe_size; declare -u __troupe_cmd; echo set").output == "set\n");
  CHECK(f.shell("echo next1").output == "next1\n");
  CHECK(f.shell("P=kept; declare -n __troupe_cmd=P __troupe_size=P; echo named").output ==
        "named\n");
  CHECK(f.shell("echo next2; echo $P").output == "next2\nkept\n");
  // Output goes to troupe whatever an exec >file did; errors carry the command's own lines.
  CHECK(f.shell("exec >log.txt 2>&1; echo hidden").output == "");
  CHECK(f.shell("echo where; cat log.txt").output == "where\nhidden\n");
  CHECK(f.shell("echo one\necho two\nno_such_command_x").output.find("line 3: no_such_command_x") !=
        std::string::npos);
  // A loop variable made read-only ends the shell after the command, which still reports in
  // full; the next command finds it gone and runs in a new one.
  auto sealed =
    f.run("shell", {{"command", "readonly __troupe_once; echo sealed; echo $$"}, {"timeout", 10}});
  CHECK(sealed.output.rfind("sealed\n", 0) == 0);
  auto after = f.run("shell", {{"command", "echo on; echo $$"}, {"timeout", 10}});
  CHECK(after.output.rfind("on\n", 0) == 0);
  CHECK(after.output.substr(3) != sealed.output.substr(7));
}

TEST_CASE("a command reaches bash byte for byte, whatever its locale and its bytes") {
  executor_fixture f;
  // The framing counts bytes; bash's read -N counts characters in its locale unless told not to.
  CHECK_FALSE(f.shell("export LC_ALL=C.UTF-8 LANG=C.UTF-8").is_error);
  CHECK(f.shell("printf '%s\\n' 'écho ✓ ü'").output == "écho ✓ ü\n");
  CHECK(f.shell("echo \"${#LC_ALL}\"").output == "7\n"); // the shell's own locale is kept
  // bash drops NUL bytes without counting them: the framing drops them first.
  CHECK(f.shell(std::string("echo a\0b", 8)).output == "ab\n");
  // No newline at the end, a continuation, text like the framing's own, many lines.
  CHECK(f.shell("echo last").output == "last\n");
  CHECK(f.shell("echo one \\").output == "one\n"); // a continuation, ended as in a script
  CHECK(f.shell("printf '%s\\n' '0000000099' 'eval x' '__TROUPE_DONE_ 0'").output ==
        "0000000099\neval x\n__TROUPE_DONE_ 0\n");
  std::string many;
  for (int i = 0; i < 2000; ++i)
    many += "echo line" + std::to_string(i) + "\n";
  auto out = f.shell(many).output;
  CHECK(out.rfind("line0\n", 0) == 0);
  CHECK(out.find("line1999\n") != std::string::npos);
  CHECK(f.shell("echo next").output == "next\n");
}

TEST_CASE("commands stay in step after one defines read, turns aliases on or sets TMOUT") {
  executor_fixture f;
  // Out of step, a command's text would run as the shell's own script, reading the framing's
  // pipe: an unclosed quote would swallow the framing and wait for the timeout, and `cat`
  // would eat the commands that follow.
  CHECK_FALSE(
    f.shell("read() { :; }; shopt -s expand_aliases; alias builtin=: eval=: read=:").is_error);
  auto open_quote = f.run("shell", {{"command", "echo \"unterminated"}, {"timeout", 10}});
  CHECK(open_quote.output.find("unexpected EOF") != std::string::npos);
  CHECK(open_quote.output.find("timed out") == std::string::npos);
  CHECK(f.shell("cat; echo after").output == "after\n");
  CHECK(f.shell("printf '%s\\n' 'é ✓'").output == "é ✓\n");
  // A read timeout of 50 ms would cut a long command short.
  CHECK_FALSE(f.shell("export TMOUT=0.05 LC_ALL=C.UTF-8").is_error);
  std::string long_command = "echo start; : '" + std::string(3000000, 'x') + "'; echo end";
  CHECK(f.run("shell", {{"command", long_command}, {"timeout", 30}}).output == "start\nend\n");
  CHECK(f.shell("echo \"still $TMOUT\"").output == "still 0.05\n");
}

TEST_CASE("the end marker's nonce is kept in no variable or function, and no IFS bends the status") {
  executor_fixture f;
  // Functions and variables: the marker's text is written with each command, never kept.
  CHECK(f.shell("(set; declare -f) | grep -c '__TROUPE''_DONE' || true").output == "0\n");
  CHECK(f.shell("IFS=1; (exit 1)").exit_code == 1);
  CHECK(f.shell("(exit 10)").exit_code == 10);
  CHECK(f.shell("(exit 21)").exit_code == 21);
  CHECK(f.shell("unset IFS; echo fine").output == "fine\n");
}

TEST_CASE("a shell stopped for being idle takes its reader thread with it") {
  using namespace std::chrono_literals;
  executor_fixture f{30000, 10 << 20, "idle-reader", 150ms};
  auto alive = [](long pid) { return ::kill(static_cast<pid_t>(pid), 0) == 0; };
  CHECK(readers().empty());
  auto bash_pid = std::stol(f.shell("echo $$").output);
  CHECK(readers().size() == 1); // kept between commands
  for (int i = 0; i < 200 && alive(bash_pid); ++i)
    std::this_thread::sleep_for(10ms);
  REQUIRE_FALSE(alive(bash_pid));
  for (int i = 0; i < 200 && !readers().empty(); ++i)
    std::this_thread::sleep_for(10ms);
  CHECK(readers().empty());
  CHECK(f.shell("echo again").output.find("again\n") != std::string::npos);
  CHECK(readers().size() == 1);
}

TEST_CASE("a shell started ahead is the one the first command runs in, and one never taken is stopped") {
  using namespace std::chrono_literals;
  temp_dir dir;
  // A bash that notes its pid: the shell's own process (exec keeps it).
  auto wrapper = dir / "bash";
  {
    std::ofstream out{wrapper};
    out << "#!/bin/sh\necho $$ >> '" << (dir / "pids").string() << "'\nexec /bin/bash \"$@\"\n";
  }
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  tool_context context;
  context.cwd = dir.path();
  context.shell_program = wrapper.string();
  context.start_shell_early = true;
  auto ahead_context = context;
  ahead_context.environment["STARTED"] = "ahead";
  context.environment["STARTED"] = "by the executor";
  auto first_pid = [&] {
    for (int i = 0; i < 500 && read_file(dir / "pids").empty(); ++i)
      std::this_thread::sleep_for(10ms);
    return std::stol(split_lines(read_file(dir / "pids")).at(0));
  };

  SUBCASE("taken by the executor") {
    context.started_shell = std::make_shared<shell_ahead>(ahead_context, "0123456789abcdef");
    actor_system_fixture actors;
    auto executor = spawn_tool_executor(
      actors.sys(), std::make_shared<const tool_registry>(make_builtin_registry()), context,
      spawn_disk_io(actors.sys()));
    context = tool_context{}; // the executor holds the only reference now
    caf::scoped_actor self{actors.sys()};
    tool_result out;
    tool_call call{"call_1", "shell", {{"command", "echo $STARTED $$"}}, call_format::native};
    self->request(executor, std::chrono::seconds{30}, execute_atom::value, call)
      .receive([&](tool_result& r) { out = std::move(r); },
               [&](caf::error& e) { FAIL("execute failed: " << actors.sys().render(e)); });
    CHECK(out.output == "ahead " + std::to_string(first_pid()) + "\n");
    CHECK(split_lines(read_file(dir / "pids")).size() == 1); // no second shell
    caf::anon_send_exit(executor, caf::exit_reason::user_shutdown);
  }
  SUBCASE("never taken") {
    auto ahead = std::make_shared<shell_ahead>(ahead_context, "0123456789abcdef");
    auto pid = static_cast<pid_t>(first_pid());
    CHECK(::kill(pid, 0) == 0);
    ahead.reset(); // its last holder gone: the shell is stopped and reaped
    CHECK(::kill(pid, 0) == -1);
    CHECK(errno == ESRCH);
  }
}
