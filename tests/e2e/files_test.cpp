// The session's files as other users and a full disk see them: modes under any umask, and the
// size cap of `troupe notify`.

#include <doctest/doctest.h>

#include <signal.h>
#include <sys/stat.h>

#include <sstream>

#include "support/cli_fixture.hpp"

using namespace troupe;
using namespace troupe::test;
using nlohmann::json;

namespace {

// Sets the umask (inherited by the troupe processes the test starts) for the object's lifetime.
struct umask_guard {
  explicit umask_guard(mode_t mask) : saved(::umask(mask)) {}
  ~umask_guard() { ::umask(saved); }
  mode_t saved;
};

json shell_call(json input) {
  return {{"text", ""}, {"tool_calls", json::array({{{"name", "shell"}, {"input", input}}})}};
}

} // namespace

TEST_CASE("every directory under sessions/ is 0700 and every file 0600, whatever the umask") {
  cli_fixture f;
  umask_guard open_umask{0};
  auto big = json{{"command", "seq 1 3000; echo SECRET=hunter2"}};
  write_script(f.dir / "work/child.jsonl", {shell_call(big), text_line("child done")});
  auto background = json{{"command", "echo SECRET=hunter2"}, {"run_in_background", true}};
  auto launch = json{{"prompt", "look"}, {"model", "scripted:child.jsonl"}};
  auto model = f.script({shell_call(big), shell_call(background),
                         {{"text", ""}, {"tool_calls", json::array({{{"name", "task"},
                                                                     {"input", launch}}})}},
                         text_line("done")});
  REQUIRE(f.run({"--model", model, "--max-tool-output", "1000", "--session-id", "orig", "go"})
            .exit_code == 0);
  auto dir = session_dir(f, "orig");
  // A notify whose writer died mid-line before it, and a transcript line torn by a crash.
  write_file(dir / "queue.jsonl", R"({"id":"ntf_torn","text":"cut)");
  REQUIRE(run_troupe({"notify", "orig", "news"}, f.options()).exit_code == 0);
  write_file(dir / "transcript.jsonl",
             read_file(dir / "transcript.jsonl") + R"({"id":"msg_t","role":"assis)");
  auto resumed = f.run({"--resume", "orig", "--model",
                        f.script({text_line("noted"), text_line("more done"), text_line("x")}),
                        "more"});
  REQUIRE(resumed.exit_code == 0);
  CHECK(resumed.err.find("moved to") != std::string::npos);
  REQUIRE(f.run({"--resume", "orig", "--fork", "--session-id", "copy", "--model",
                 f.script({text_line("forked")}), "go on"})
            .exit_code == 0);

  // Everything the runs made is there...
  CHECK(std::filesystem::exists(dir / "transcript.jsonl.torn"));
  CHECK(std::filesystem::exists(dir / "queue.jsonl.bad"));
  CHECK(!std::filesystem::is_empty(dir / "tool-results"));
  CHECK(!std::filesystem::is_empty(dir / "tasks"));
  auto agent = std::filesystem::directory_iterator(dir / "agents")->path();
  CHECK(!std::filesystem::is_empty(agent / "tool-results"));
  CHECK(!std::filesystem::is_empty(session_dir(f, "copy") / "tool-results"));
  // ...and only its owner can read any of it.
  std::vector<std::string> loose;
  size_t checked = 0;
  auto sessions = f.dir / "home/sessions";
  auto check = [&](const std::filesystem::path& p) {
    struct stat st{};
    REQUIRE(::lstat(p.c_str(), &st) == 0);
    auto mode = st.st_mode & 07777;
    auto want = S_ISDIR(st.st_mode) ? 0700u : 0600u;
    ++checked;
    if (!S_ISLNK(st.st_mode) && mode != want)
      loose.push_back(p.string() + " is " + std::to_string(mode / 64) +
                      std::to_string(mode / 8 % 8) + std::to_string(mode % 8));
  };
  check(sessions);
  for (auto& entry : std::filesystem::recursive_directory_iterator(sessions))
    check(entry.path());
  MESSAGE(checked << " paths checked");
  CHECK(checked > 25);
  std::string listed;
  for (auto& l : loose)
    listed += l + "\n";
  CHECK_MESSAGE(loose.empty(), listed);
}

TEST_CASE("notify refuses a message over its size cap before reading past it") {
  cli_fixture f;
  REQUIRE(f.run({"--model", f.script({text_line("first")}), "--session-id", "s1", "hi"})
            .exit_code == 0);
  auto queue = session_dir(f, "s1") / "queue.jsonl";
  auto over = run_troupe({"notify", "s1", "--max-bytes", "1000", std::string(1001, 'w')},
                         f.options());
  CHECK(over.exit_code != 0);
  CHECK(over.err.find("longer than 1000 bytes") != std::string::npos);
  CHECK(!std::filesystem::exists(queue));
  CHECK(run_troupe({"notify", "s1", "--max-bytes", "1000", std::string(1000, 'w')}, f.options())
          .exit_code == 0);
  auto env_cap = f.options();
  env_cap.env["TROUPE_MAX_NOTIFICATION_BYTES"] = "500";
  auto over_env = run_troupe({"notify", "s1", std::string(501, 'v')}, env_cap);
  CHECK(over_env.exit_code != 0);
  CHECK(over_env.err.find("longer than 500 bytes") != std::string::npos);
  auto zero = run_troupe({"notify", "s1", "--max-bytes", "0", "x"}, f.options());
  CHECK(zero.exit_code != 0);
  CHECK(zero.err.find("--max-bytes") != std::string::npos);

  // 50 MB offered on stdin: notify stops reading one byte past the cap and refuses.
  auto feeder = R"(
import subprocess, sys
p = subprocess.Popen([sys.argv[1], "notify", "s1", "--max-bytes", "100000"],
                     stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
sent, block = 0, b"z" * 65536
try:
    while sent < 50000000:
        p.stdin.write(block)
        p.stdin.flush()
        sent += len(block)
    p.stdin.close()
except BrokenPipeError:
    pass
err = p.stderr.read().decode()
print(sent, p.wait(), err.strip())
)";
  auto fed = run_process({"/bin/sh", "-c", "exec python3 -c \"$0\" \"$1\"", feeder,
                          TROUPE_BINARY},
                         f.options());
  REQUIRE(fed.exit_code == 0);
  MESSAGE(fed.out);
  std::istringstream words{fed.out};
  size_t sent = 0;
  int code = 0;
  words >> sent >> code;
  CHECK(code != 0);
  CHECK(sent < 100001 + (1u << 20)); // the cap, plus what the pipe buffered
  CHECK(fed.out.find("longer than 100000 bytes") != std::string::npos);
  CHECK(read_jsonl(queue).size() == 1); // only the message within the cap
}

TEST_CASE("under a file-size limit notify fails with its message and takes its line back") {
  // `ulimit -f` makes a write past it raise SIGXFSZ, whose default action kills the writer
  // mid-line; troupe ignores it and handles the EFBIG like any failed write.
  cli_fixture f;
  REQUIRE(f.run({"--model", f.script({text_line("first")}), "--session-id", "s1", "hi"})
            .exit_code == 0);
  auto queue = session_dir(f, "s1") / "queue.jsonl";
  REQUIRE(run_troupe({"notify", "s1", "small"}, f.options()).exit_code == 0);
  auto before = read_file(queue);
  auto limited = run_process({"/bin/sh", "-c", "ulimit -f 1; exec \"$0\" notify s1 \"$1\"",
                              TROUPE_BINARY, std::string(4000, 'z')},
                             f.options());
  CHECK(limited.exit_code != 0);
  CHECK(limited.exit_code != 128 + SIGXFSZ);
  CHECK(limited.err.find("File too large") != std::string::npos);
  CHECK(read_file(queue) == before);
}
