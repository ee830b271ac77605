// Each session passes its own environment to its processes: a subagent's shell and hooks see
// the subagent's id as TROUPE_SESSION_ID (never the root's, never troupe's own), and
// `troupe notify "$TROUPE_SESSION_ID"` from a subagent's shell reaches that subagent.

#include <doctest/doctest.h>

#include <algorithm>
#include <future>

#include "support/cli_fixture.hpp"

using namespace troupe;
using namespace troupe::test;
using nlohmann::json;

namespace {

json shell_call(const std::string& command) {
  return {{"tool_calls", json::array({{{"name", "shell"}, {"input", {{"command", command}}}}})}};
}

json task_call(const std::string& script) {
  return {{"tool_calls",
           json::array({{{"name", "task"},
                         {"input", {{"prompt", "work"}, {"model", "scripted:" + script}}}}})}};
}

/// The one subagent of session `id`: its directory.
std::filesystem::path only_agent(cli_fixture& f, const std::string& id) {
  std::vector<std::filesystem::path> agents;
  for (auto& entry : std::filesystem::directory_iterator(session_dir(f, id) / "agents"))
    agents.push_back(entry.path());
  REQUIRE(agents.size() == 1);
  return agents[0];
}

/// The contents of the tool results in a transcript, in order.
std::vector<std::string> tool_outputs(const std::filesystem::path& transcript) {
  std::vector<std::string> out;
  for (auto& m : read_jsonl(transcript))
    if (m["role"] == "tool")
      out.push_back(m["content"]);
  return out;
}

/// The contents of the task notifications in a transcript that contain `text`.
size_t notifications_with(const std::filesystem::path& transcript, const std::string& text) {
  size_t n = 0;
  for (auto& m : read_jsonl(transcript))
    if (m.value("origin", "") == "task-notification" &&
        m["content"].get<std::string>().find(text) != std::string::npos)
      ++n;
  return n;
}

} // namespace

TEST_CASE("a subagent's shell gets the subagent's own id as TROUPE_SESSION_ID, the root's the root's") {
  cli_fixture f;
  write_script(f.dir / "work/child.jsonl",
               {shell_call("echo \"id=$TROUPE_SESSION_ID bin=${TROUPE_BIN:+set}\""),
                text_line("child done")});
  auto parent = f.script({task_call("child.jsonl"),
                          shell_call("echo \"id=$TROUPE_SESSION_ID\""), text_line("parent done")});
  // As when troupe runs from another session's shell: that session's id is not inherited.
  process_options opts;
  opts.env["TROUPE_SESSION_ID"] = "outer-session";
  auto r = f.run({"--model", parent, "--session-id", "envroot", "go"}, opts);
  REQUIRE(r.exit_code == 0);
  auto agent = only_agent(f, "envroot");
  auto agent_id = agent.filename().string();
  CHECK(agent_id.rfind("agent_", 0) == 0);
  CHECK(tool_outputs(agent / "transcript.jsonl") ==
        std::vector<std::string>{"id=" + agent_id + " bin=set\n"});
  auto root = tool_outputs(session_dir(f, "envroot") / "transcript.jsonl");
  REQUIRE(root.size() == 2);
  CHECK(root[1] == "id=envroot\n");
}

TEST_CASE("troupe notify \"$TROUPE_SESSION_ID\" from a subagent's shell reaches the subagent") {
  cli_fixture f;
  write_script(f.dir / "work/child.jsonl",
               {shell_call("\"$TROUPE_BIN\" notify \"$TROUPE_SESSION_ID\" hello-from-the-child"),
                text_line("child done")});
  auto parent = f.script({task_call("child.jsonl"), text_line("parent done")});
  auto r = f.run({"--model", parent, "--session-id", "notifyroot", "go"});
  REQUIRE(r.exit_code == 0);
  auto agent = only_agent(f, "notifyroot");
  auto outputs = tool_outputs(agent / "transcript.jsonl");
  REQUIRE(outputs.size() == 1);
  CHECK(outputs[0].find("delivered to the running agent " + agent.filename().string()) !=
        std::string::npos);
  CHECK(notifications_with(agent / "transcript.jsonl", "hello-from-the-child") == 1);
  CHECK(notifications_with(session_dir(f, "notifyroot") / "transcript.jsonl",
                           "hello-from-the-child") == 0);
  // Delivered, so taken out of the subagent's durable queue.
  CHECK(read_file(agent / "queue.jsonl").find("hello-from-the-child") == std::string::npos);
}

TEST_CASE("troupe notify AGENT_ID from another process reaches a running subagent through the root") {
  cli_fixture f;
  // The child waits in its shell until the test has sent its notification.
  auto flag = f.dir / "sent";
  write_script(f.dir / "work/child.jsonl",
               {shell_call("for i in $(seq 100); do [ -e '" + flag.string() +
                           "' ] && break; sleep 0.1; done; echo waited"),
                text_line("child done")});
  auto parent = f.script({task_call("child.jsonl"), text_line("parent done")});
  auto run = std::async(std::launch::async, [&] {
    return f.run({"--model", parent, "--session-id", "outside", "go"});
  });
  std::filesystem::path agent;
  REQUIRE(wait_until([&] {
    std::error_code ec;
    for (auto it = std::filesystem::directory_iterator(session_dir(f, "outside") / "agents", ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
      if (std::filesystem::exists(it->path() / "transcript.jsonl"))
        agent = it->path();
    return !agent.empty();
  }, std::chrono::seconds{10}));
  auto sent = run_troupe({"notify", agent.filename().string(), "from-outside"}, f.options());
  CHECK(sent.exit_code == 0);
  CHECK(sent.out.find("delivered to the running agent") != std::string::npos);
  write_file(flag, "");
  REQUIRE(run.get().exit_code == 0);
  CHECK(notifications_with(agent / "transcript.jsonl", "from-outside") == 1);
  CHECK(notifications_with(session_dir(f, "outside") / "transcript.jsonl", "from-outside") == 0);
  // An id that is neither a session's nor an agent's is still an error.
  auto unknown = run_troupe({"notify", "agent_nosuch", "x"}, f.options());
  CHECK(unknown.exit_code == 1);
  CHECK(unknown.err.find("unknown session 'agent_nosuch'") != std::string::npos);
}

TEST_CASE("hooks see their own session's TROUPE_SESSION_ID: troupe's environment is never set") {
  cli_fixture f;
  auto seen = f.dir / "seen.txt";
  write_file(f.dir / "settings.json",
             json{{"hooks",
                   {{"PreToolUse",
                     json::array({{{"hooks", json::array({{{"type", "command"},
                                                           {"command", "echo \"$TROUPE_SESSION_ID\" >> '" +
                                                                         seen.string() + "'"}}})}}})}}}}
               .dump());
  write_script(f.dir / "work/child.jsonl", {shell_call("true"), text_line("child done")});
  auto parent = f.script({task_call("child.jsonl"), shell_call("true"), text_line("parent done")});
  auto r = f.run({"--model", parent, "--session-id", "hookroot", "--settings",
                  (f.dir / "settings.json").string(), "go"});
  REQUIRE(r.exit_code == 0);
  auto agent_id = only_agent(f, "hookroot").filename().string();
  // The root's calls' hooks saw the root's id, the child's call's hook the child's.
  auto lines = split_lines(read_file(seen));
  std::sort(lines.begin(), lines.end());
  lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
  CHECK(lines == std::vector<std::string>{agent_id, "hookroot"});
}
