// What tool processes leave behind: processes a shell command, a background task, a subagent's
// tool or a hook detaches from its session (setsid, setsid -f, nohup, a double fork, a cleared
// environment) are stopped when their task, session or troupe itself ends, and orphans that
// exit meanwhile are reaped, never left as zombies of troupe.

#include <doctest/doctest.h>

#include <signal.h>

#include <fstream>
#include <sstream>

#include "support/cli_fixture.hpp"

using namespace troupe;
using namespace troupe::test;
using nlohmann::json;

namespace {

json shell_call(const std::string& command, bool background = false) {
  json input = {{"command", command}};
  if (background)
    input["run_in_background"] = true;
  return {{"text", ""}, {"tool_calls", json::array({{{"name", "shell"}, {"input", input}}})}};
}

/// A sleeper that appends its own pid to `file` (in the workspace) first.
std::string sleeper(const std::string& file) {
  return "sh -c 'echo $$ >> " + file + "; exec sleep 300' >/dev/null 2>&1";
}

/// Waits (in the shell) until `file` has `n` lines.
std::string await_lines(const std::string& file, int n) {
  return "for i in $(seq 200); do [ \"$(cat " + file + " 2>/dev/null | wc -l)\" -ge " +
         std::to_string(n) + " ] && break; sleep 0.05; done";
}

/// A shell command that prints GONE once every pid in `file` is gone or a zombie, ALIVE after
/// about 15 s.
std::string check_gone(const std::string& file) {
  return await_lines(file, 1) + "; for i in $(seq 150); do alive=0; for p in $(cat " + file +
         "); do [ -e /proc/$p ] && ! grep -q '^State:.*Z' /proc/$p/status 2>/dev/null && "
         "alive=1; done; [ $alive = 0 ] && { echo SWEPT_\"GONE\"; exit 0; }; sleep 0.1; done; "
         "echo SWEPT_\"ALIVE\"";
}

std::vector<int> read_pids(const std::filesystem::path& file) {
  std::vector<int> pids;
  std::ifstream in{file};
  for (int pid; in >> pid;)
    pids.push_back(pid);
  return pids;
}

/// Kills whatever a failed test left running.
struct pid_cleanup {
  std::vector<std::filesystem::path> files;
  ~pid_cleanup() {
    for (auto& file : files)
      for (int pid : read_pids(file))
        if (pid > 1)
          ::kill(pid, SIGKILL);
  }
};

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in{path};
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// What the tools printed, from the session's transcript (subagents' included).
std::string transcript_text(cli_fixture& f, const std::string& id) {
  return slurp(session_dir(f, id) / "transcript.jsonl");
}

} // namespace

TEST_CASE("processes a shell command detached from its session are gone when troupe exits") {
  cli_fixture f;
  pid_cleanup cleanup{{f.dir / "work/pids"}};
  auto command = "setsid " + sleeper("pids") + " &\n" +             //
                 "setsid -f " + sleeper("pids") + "\n" +            //
                 "( ( " + sleeper("pids") + " & ) & )\n" +          //
                 "nohup " + sleeper("pids") + " & disown\n" +       //
                 "bash -c \"setsid sh -c 'echo \\$\\$ >> pids; exec sleep 300' >/dev/null 2>&1 &\"\n" +
                 // No tag left, no parent but troupe: it goes when troupe exits.
                 "( setsid /usr/bin/env -i /bin/sh -c 'echo $$ >> pids; exec /bin/sleep 300' "
                 ">/dev/null 2>&1 & )\n" +
                 await_lines("pids", 6) + "\necho started";
  auto r = f.run({"--model", f.script({shell_call(command), text_line("done")}), "--tool-format",
                  "tool", "--session-id", "detached", "go"});
  CHECK(r.exit_code == 0);
  auto pids = read_pids(f.dir / "work/pids");
  REQUIRE(pids.size() == 6);
  for (int pid : pids) {
    INFO("pid " << pid);
    CHECK(wait_until_gone(pid, std::chrono::seconds{10}));
  }
}

TEST_CASE("a background task's detached process is gone when the task ends, the session "
          "still running") {
  cli_fixture f;
  pid_cleanup cleanup{{f.dir / "work/taskpid"}};
  auto task = "setsid " + sleeper("taskpid") + " &\n" + await_lines("taskpid", 1);
  auto r = f.run({"--model",
                  f.script({shell_call(task, true), shell_call(check_gone("taskpid")),
                            text_line("done")}),
                  "--tool-format", "tool", "--session-id", "task", "go"});
  CHECK(r.exit_code == 0);
  auto text = transcript_text(f, "task");
  CHECK(text.find("SWEPT_GONE") != std::string::npos);
  CHECK(text.find("SWEPT_ALIVE") == std::string::npos);
}

TEST_CASE("a subagent's detached process is gone when the subagent ends") {
  cli_fixture f;
  pid_cleanup cleanup{{f.dir / "work/agentpid"}};
  write_script(f.dir / "work/child.jsonl",
               {shell_call("setsid " + sleeper("agentpid") + " &\n" + await_lines("agentpid", 1)),
                text_line("child done")});
  json launch = {{"prompt", "leave a sleeper"}, {"model", "scripted:child.jsonl"}};
  auto r = f.run(
    {"--model",
     f.script({{{"text", ""}, {"tool_calls", json::array({{{"name", "task"}, {"input", launch}}})}},
               shell_call(check_gone("agentpid")), text_line("done")}),
     "--tool-format", "tool", "--session-id", "parent", "go"});
  CHECK(r.exit_code == 0);
  auto text = transcript_text(f, "parent");
  CHECK(text.find("SWEPT_GONE") != std::string::npos);
  CHECK(text.find("SWEPT_ALIVE") == std::string::npos);
}

TEST_CASE("a hook's detached process is gone when the hook ends") {
  cli_fixture f;
  pid_cleanup cleanup{{f.dir / "work/hookpid"}};
  json hooks = {{"UserPromptSubmit",
                 json::array({{{"hooks", json::array({{{"type", "command"},
                                                        {"command", "setsid " +
                                                                      sleeper("hookpid") +
                                                                      " &\n" +
                                                                      await_lines("hookpid", 1)}}})}}})}};
  write_file(f.dir / "settings.json", json{{"hooks", hooks}}.dump());
  auto r = f.run({"--model", f.script({shell_call(check_gone("hookpid")), text_line("done")}),
                  "--tool-format", "tool", "--settings", (f.dir / "settings.json").string(),
                  "--session-id", "hooked", "go"});
  CHECK(r.exit_code == 0);
  auto text = transcript_text(f, "hooked");
  CHECK(text.find("SWEPT_GONE") != std::string::npos);
  CHECK(text.find("SWEPT_ALIVE") == std::string::npos);
}

TEST_CASE("orphans that exit during a session are reaped, no zombie of troupe stays") {
  cli_fixture f;
  // Ten orphans re-parented to troupe that exit at once; the shell's parent is troupe.
  auto orphans = "for i in $(seq 10); do ( setsid sh -c 'echo $$ >> short' >/dev/null 2>&1 & ) "
                 "; done\n" + await_lines("short", 10) + "\n";
  auto check = "for i in $(seq 150); do left=0; for p in $(cat short); do [ -e /proc/$p ] && "
               "left=$((left+1)); done; [ $left = 0 ] && break; sleep 0.1; done; "
               "z=0; for s in /proc/[0-9]*/stat; do read -r line < $s 2>/dev/null || continue; "
               "set -- ${line##*) }; [ \"$1\" = Z ] && [ \"$2\" = $PPID ] && z=$((z+1)); done; "
               "echo \"UNREAPED=$left ZOMBIES=$z\"";
  auto r = f.run({"--model",
                  f.script({shell_call(orphans), shell_call("sleep 1"), shell_call(check),
                            text_line("done")}),
                  "--tool-format", "tool", "--session-id", "zombies", "go"});
  CHECK(r.exit_code == 0);
  CHECK(transcript_text(f, "zombies").find("UNREAPED=0 ZOMBIES=0") != std::string::npos);
}
