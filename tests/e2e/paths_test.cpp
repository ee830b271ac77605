// The workspace boundary against symbolic links, read deny rules against links and searches,
// and signals while a tool thread is busy: the troupe binary with a scripted model.

#include <doctest/doctest.h>

#include <signal.h>

#include <regex>

#include "support/cli_fixture.hpp"

using namespace troupe;
using namespace troupe::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

json call(const std::string& tool, json input) {
  return {{"text", ""}, {"tool_calls", json::array({{{"name", tool}, {"input", std::move(input)}}})}};
}

// The tool results of a run's transcript, in order.
std::vector<std::string> tool_results(cli_fixture& f) {
  std::vector<std::string> out;
  for (auto& line : read_jsonl(f.transcripts().at(0)))
    if (line["role"] == "tool")
      out.push_back(line["content"].is_string() ? line["content"].get<std::string>()
                                                : line["content"].dump());
  return out;
}

// The last stream-json line of a run: its result.
json last_line(const std::string& out) {
  auto lines = split_lines(out);
  REQUIRE_FALSE(lines.empty());
  return json::parse(lines.back());
}

// Every file under `dir` with its content.
std::map<std::string, std::string> tree(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (auto& entry : fs::recursive_directory_iterator(dir))
    if (entry.is_regular_file() && !entry.is_symlink())
      files[entry.path().lexically_relative(dir).string()] = read_file(entry.path());
  return files;
}

} // namespace

TEST_CASE("accept-edits never writes outside the workspace through a symbolic link") {
  cli_fixture f;
  auto work = f.dir / "work";
  auto outside = f.dir / "outside";
  fs::create_directories(outside / "deep");
  write_file(outside / "victim.txt", "original\n");
  fs::create_directory_symlink(outside, work / "link");
  fs::create_symlink(outside / "victim.txt", work / "file_link");
  fs::create_symlink(outside / "created_by_dangling.txt", work / "dangling");
  fs::create_symlink(work / "link", work / "chain"); // chain -> link -> outside
  fs::create_symlink("link/deep", work / "relative");
  auto before = tree(outside);
  auto model = f.script({
    call("write", {{"path", "link/../inside.txt"}, {"content", "in"}}),
    call("write", {{"path", "link/new.txt"}, {"content", "x"}}),
    call("write", {{"path", "file_link"}, {"content", "overwritten"}}),
    call("edit", {{"path", "file_link"}, {"old_string", "original"}, {"new_string", "edited"}}),
    call("patch", {{"path", "file_link"},
                   {"patch", "<<<<<<< ORIGINAL\noriginal\n=======\npatched\n>>>>>>> UPDATED\n"}}),
    call("write", {{"path", "dangling"}, {"content", "x"}}),
    call("write", {{"path", "chain/new.txt"}, {"content", "x"}}),
    call("write", {{"path", "relative/new.txt"}, {"content", "x"}}),
    call("write", {{"path", "/proc/self/root" + (outside / "abs.txt").string()}, {"content", "x"}}),
    text_line("done"),
  });
  auto r = f.run({"--model", model, "--output-format", "stream-json", "go"});
  CHECK(tree(outside) == before);
  CHECK(read_file(work / "inside.txt") == "in"); // `link/..` is the workspace, lexically
  auto results = tool_results(f);
  REQUIRE(results.size() == 9);
  CHECK(results[0].find("Created") != std::string::npos);
  for (size_t i = 1; i < 9; ++i) {
    CAPTURE(results[i]);
    CHECK(results[i].find("Permission denied") != std::string::npos);
    CHECK(results[i].find("outside the workspace") != std::string::npos);
  }
  CHECK(r.exit_code == 4); // permission_blocked: the model gave up after refusals
}

TEST_CASE("a read deny rule holds through a workspace link and for grep, glob and ls") {
  cli_fixture f;
  auto work = f.dir / "work";
  fs::create_directories(work / "secret");
  write_file(work / "secret/key.txt", "SECRET=hunter2\n");
  write_file(work / "notes.txt", "SECRET=public\n");
  fs::create_directory_symlink(work / "secret", work / "door");
  auto model = f.script({
    call("read", {{"path", "door/key.txt"}}),
    call("grep", {{"pattern", "SECRET"}}),
    call("grep", {{"pattern", "SECRET"}, {"path", "door"}}),
    call("glob", {{"pattern", "**/*.txt"}}),
    call("glob", {{"pattern", "*"}, {"path", "door"}}),
    call("ls", {{"path", "door"}}),
    text_line("done"),
  });
  auto r = f.run({"--model", model, "--deny", "read(secret/**)", "--output-format",
                  "stream-json", "go"});
  auto results = tool_results(f);
  REQUIRE(results.size() == 6);
  CHECK(results[0].find("denied by the rule read(secret/**)") != std::string::npos);
  for (auto& result : results) {
    CAPTURE(result);
    CHECK(result.find("hunter2") == std::string::npos);
    CHECK(result.find("key.txt") == std::string::npos);
  }
  CHECK(results[1].find("notes.txt:1:SECRET=public") != std::string::npos);
  for (size_t i = 1; i < 6; ++i) {
    CAPTURE(results[i]);
    CHECK(results[i].find("that a deny rule forbids reading: read(secret/**)") !=
          std::string::npos);
  }
  CHECK(r.exit_code == 0);
}

TEST_CASE("SIGINT and SIGTERM end the run while a scan that cannot be cut is running") {
  for (int sig : {SIGINT, SIGTERM}) {
    CAPTURE(sig);
    cli_fixture f;
    // std::regex backtracks exponentially on (a|a)*c over a line of a's: the grep runs for
    // ever, on a runner thread, in a step the signal interrupts.
    write_file(f.dir / "work/a.txt", std::string(64, 'a') + "\n");
    auto model = f.script({call("grep", {{"pattern", "(a|a)*c"}}), text_line("never")});
    process_options opts;
    opts.interrupt_on_output = "(a|a)*c"; // the reply naming the call is out: the scan starts
    opts.interrupt_signal = sig;
    opts.timeout = std::chrono::seconds{30}; // a hang guard only
    auto r = f.run_unpermitted({"--model", model, "--permission-mode", "plan",
                                "--output-format", "stream-json", "go"},
                               opts);
    CHECK(r.exit_code == 130);
    auto result = last_line(r.out);
    CHECK(result["terminal_reason"] == "interrupted");
  }
}

TEST_CASE("the exit that does not wait for an uncut scan still stops what the tools left") {
  cli_fixture f;
  write_file(f.dir / "work/a.txt", std::string(64, 'a') + "\n");
  // `env -i` drops the owner tag: only the sweep of troupe's whole subtree at its exit finds it.
  auto model = f.script(
    {call("shell", {{"command", "env -i setsid sleep 300 </dev/null >/dev/null 2>&1 & "
                                "echo LEFT=$!"}}),
     call("grep", {{"pattern", "(a|a)*c"}}), text_line("never")});
  process_options opts;
  opts.interrupt_on_output = "(a|a)*c";
  opts.timeout = std::chrono::seconds{30}; // a hang guard only
  // No sandbox: its pid namespace would show the shell another pid than the host's /proc.
  auto r = f.run_unpermitted({"--model", model, "--permission-mode", "bypass", "--sandbox", "off",
                              "--output-format", "stream-json", "go"},
                             opts);
  CHECK(r.exit_code == 130);
  std::smatch left; // the tool's output, not the command that names it
  REQUIRE(std::regex_search(r.out, left, std::regex{"LEFT=([0-9]+)"}));
  auto pid = std::stoi(left[1]);
  auto gone = [pid] {
    auto status = read_file("/proc/" + std::to_string(pid) + "/status");
    return status.empty() || status.find("\nState:\tZ") != std::string::npos;
  };
  CHECK(wait_until(gone, std::chrono::seconds{10}));
  ::kill(pid, SIGKILL);
}

TEST_CASE("a chat whose session has ended does not stay open for a scan that cannot be cut") {
  cli_fixture f;
  write_file(f.dir / "work/a.txt", std::string(64, 'a') + "\n");
  auto model = f.script({call("grep", {{"pattern", "(a|a)*c"}}), text_line("never")});
  auto opts = f.options();
  opts.stdin_text = "go\n"; // then the end of input: the chat ends once the turn does
  // SIGINT answers the call; the scan, started within milliseconds of the chat, goes on.
  opts.interrupt_after = std::chrono::seconds{3};
  opts.timeout = std::chrono::seconds{30}; // a hang guard: before the fix the chat never ended
  auto r = run_troupe({"chat", "--cwd", (f.dir / "work").string(), "--model", model,
                       "--permission-mode", "plan"},
                      opts);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("a tool was still running") != std::string::npos);
}

TEST_CASE("a run that exits without waiting for a scan that cannot be cut leaves no sandbox "
          "/tmp behind") {
  cli_fixture f;
  write_file(f.dir / "work/a.txt", std::string(64, 'a') + "\n");
  temp_dir tmp;
  auto model = f.script({call("grep", {{"pattern", "(a|a)*c"}}), text_line("never")});
  auto opts = f.options();
  opts.env["TMPDIR"] = tmp.path().string();
  // The run's shell, and with it the sandbox's private /tmp, starts with the first request;
  // SIGINT answers the call, the scan goes on, and the exit does not wait for it.
  opts.interrupt_after = std::chrono::seconds{3};
  opts.timeout = std::chrono::seconds{30};
  auto r = run_troupe({"run", "--cwd", (f.dir / "work").string(), "--model", model,
                       "--permission-mode", "bypass", "--sandbox", "workspace-write", "go"},
                      opts);
  CHECK(r.exit_code == 130);
  CHECK(r.err.find("a tool was still running") != std::string::npos);
  std::vector<std::string> left;
  for (auto& entry : fs::directory_iterator(tmp.path()))
    left.push_back(entry.path().filename().string());
  CHECK(left.empty());
}

TEST_CASE("a link a PreToolUse hook swaps in is judged by the permission check, never followed") {
  // PreToolUse hooks run before the permission check (as Claude Code's do), so the check sees
  // the tree as they left it. A link swapped in after the check is the tools' own to refuse
  // (tests/actors/tool_executor_test.cpp).
  cli_fixture f;
  auto work = f.dir / "work";
  auto outside = f.dir / "outside";
  fs::create_directories(outside);
  fs::create_directories(work / "secret");
  write_file(outside / "victim.txt", "original\n");
  write_file(work / "secret/key.txt", "SECRET=hunter2\n");
  auto swap_in = [](const std::string& target, const fs::path& at) {
    return json{{"type", "command"}, {"command", "ln -sfn '" + target + "' '" + at.string() + "'"}};
  };
  auto hooks = json{
    {"PreToolUse",
     json::array({{{"matcher", "write"}, {"hooks", json::array({swap_in(outside.string(),
                                                                         work / "link")})}},
                  {{"matcher", "edit"},
                   {"hooks", json::array({swap_in((outside / "victim.txt").string(),
                                                  work / "mine.txt")})}},
                  {{"matcher", "read"},
                   {"hooks", json::array({swap_in((work / "secret/key.txt").string(),
                                                  work / "notes.txt")})}}})}};
  write_file(f.dir / "settings.json", json{{"hooks", hooks}}.dump());
  write_file(work / "mine.txt", "original\n");
  auto model = f.script({
    call("write", {{"path", "link/new.txt"}, {"content", "escaped"}}),
    call("edit", {{"path", "mine.txt"}, {"old_string", "original"}, {"new_string", "edited"}}),
    call("read", {{"path", "notes.txt"}}),
    text_line("done"),
  });
  auto r = f.run({"--model", model, "--settings", (f.dir / "settings.json").string(), "--deny",
                  "read(secret/**)", "go"});
  CHECK_FALSE(fs::exists(outside / "new.txt"));
  CHECK(read_file(outside / "victim.txt") == "original\n");
  auto results = tool_results(f);
  REQUIRE(results.size() == 3);
  for (auto& result : results) {
    CAPTURE(result);
    CHECK(result.rfind("Permission denied: ", 0) == 0);
    CHECK(result.find("hunter2") == std::string::npos);
  }
  CHECK(results[0].find("which leads to " + (outside / "new.txt").string()) != std::string::npos);
  CHECK(results[2].find("denied by the rule read(secret/**)") != std::string::npos);
}

TEST_CASE("an interrupt from another process ends a run busy with an uncut scan, as a signal does") {
  cli_fixture f;
  write_file(f.dir / "work/a.txt", std::string(64, 'a') + "\n");
  auto model = f.script({call("grep", {{"pattern", "(a|a)*c"}}), text_line("never")});
  // Starts the run, waits for the call to show, interrupts it with `troupe interrupt`, and
  // prints the run's exit code, or "hung" when it has not ended 20 s later.
  auto driver = R"(
import os, subprocess, sys, time
troupe, work, model = sys.argv[1:4]
run = subprocess.Popen([troupe, "run", "--cwd", work, "--model", model, "--permission-mode",
                        "plan", "--session-id", "busy", "go"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
seen = b""
while b"(a|a)*c" not in seen:
    chunk = os.read(run.stdout.fileno(), 4096)
    if not chunk:
        break
    seen += chunk
time.sleep(0.5)
subprocess.run([troupe, "interrupt", "busy"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    print(run.wait(timeout=20))
except subprocess.TimeoutExpired:
    run.kill()
    print("hung")
)";
  auto r = run_process({"/bin/sh", "-c", "exec python3 -c \"$0\" \"$1\" \"$2\" \"$3\"", driver,
                        TROUPE_BINARY, (f.dir / "work").string(), model},
                       f.options());
  CHECK(r.out == "130\n");
}
