// Task notifications and control from other processes: troupe notify, interrupt and background
// against running and stopped sessions, the durable queue, its cap and the endpoint's token.

#include <doctest/doctest.h>

#include <future>
#include <sstream>
#include <thread>

#include "store/notification_queue.hpp"
#include "support/cli_fixture.hpp"

using namespace troupe;
using namespace troupe::test;
using nlohmann::json;

namespace {

std::vector<std::string> roles(const std::filesystem::path& transcript) {
  std::vector<std::string> out;
  for (auto& m : read_jsonl(transcript))
    out.push_back(m["role"].get<std::string>() +
                  (m.contains("origin") ? ":" + m["origin"].get<std::string>() : ""));
  return out;
}

// Starts a run in the background; returns once its control endpoint is up.
std::future<process_result> start_live(cli_fixture& f, std::vector<std::string> args,
                                       const std::string& id) {
  args.insert(args.begin(), {"--session-id", id});
  auto run = std::async(std::launch::async, [&f, args] { return f.run(args); });
  REQUIRE(wait_until([&] { return std::filesystem::exists(session_dir(f, id) / "control.json"); },
                     std::chrono::seconds{10}));
  return run;
}

} // namespace

TEST_CASE("notify to a stopped session queues durably, the resumed session reads it first") {
  cli_fixture f;
  REQUIRE(f.run({"--model", f.script({text_line("first")}), "--session-id", "s1", "hi"})
            .exit_code == 0);
  auto notify = run_troupe({"notify", "s1", "the", "deploy", "finished"}, f.options());
  CHECK(notify.exit_code == 0);
  CHECK(notify.out.find("queued for session s1") != std::string::npos);
  auto queue = session_dir(f, "s1") / "queue.jsonl";
  REQUIRE(read_jsonl(queue).size() == 1);

  auto resumed = f.run({"--model", f.script({text_line("saw it"), text_line("next done")}),
                        "--session-id", "s1", "next"});
  CHECK(resumed.exit_code == 0);
  CHECK(roles(session_dir(f, "s1") / "transcript.jsonl") ==
        std::vector<std::string>{"user:prompt", "assistant", "user:task-notification",
                                 "assistant", "user:prompt", "assistant"});
  auto log = read_jsonl(session_dir(f, "s1") / "transcript.jsonl");
  CHECK(log[2]["content"].get<std::string>().find("the deploy finished") != std::string::npos);
  CHECK(read_file(queue).empty()); // delivered: the queue is emptied
}

TEST_CASE("a queue entry already in the transcript is not logged again and leaves the queue") {
  // The on-disk state of a process that died between logging a notification and removing it
  // from queue.jsonl: the entry is in both. Exactly once: the next start drops it unlogged.
  cli_fixture f;
  REQUIRE(f.run({"--model", f.script({text_line("first")}), "--session-id", "s1", "hi"})
            .exit_code == 0);
  REQUIRE(run_troupe({"notify", "s1", "the", "deploy", "finished"}, f.options()).exit_code == 0);
  auto queue = session_dir(f, "s1") / "queue.jsonl";
  auto pending = read_file(queue);
  REQUIRE(read_jsonl(queue).size() == 1);
  auto id = read_jsonl(queue)[0]["id"].get<std::string>();
  REQUIRE(f.run({"--model", f.script({text_line("saw it"), text_line("next done")}),
                 "--session-id", "s1", "next"})
            .exit_code == 0);
  REQUIRE(read_file(queue).empty());
  auto transcript = session_dir(f, "s1") / "transcript.jsonl";
  auto notifications = [&] {
    std::vector<json> out;
    for (auto& m : read_jsonl(transcript))
      if (m.value("origin", "") == "task-notification")
        out.push_back(m);
    return out;
  };
  REQUIRE(notifications().size() == 1);
  CHECK(notifications()[0]["id"] == id);

  write_file(queue, pending); // the crash: logged, never removed
  auto again = f.run({"--model", f.script({text_line("once more")}), "--session-id", "s1",
                      "again"});
  CHECK(again.exit_code == 0);
  CHECK(notifications().size() == 1);
  CHECK(roles(transcript) == std::vector<std::string>{"user:prompt", "assistant",
                                                      "user:task-notification", "assistant",
                                                      "user:prompt", "assistant", "user:prompt",
                                                      "assistant"});
  CHECK(read_file(queue).empty());
}

TEST_CASE("notify and interrupt take a session's name, and reach a session that is starting") {
  cli_fixture f;
  REQUIRE(f.run({"--model", f.script({text_line("ok")}), "--session-id", "named",
                 "zebra banana prompt"})
            .exit_code == 0);
  auto name = read_json(session_dir(f, "named") / "session.json")["name"].get<std::string>();
  REQUIRE(!name.empty());
  auto by_name = run_troupe({"notify", name, "hello by name"}, f.options());
  CHECK(by_name.exit_code == 0);
  CHECK(by_name.out.find("queued for session named") != std::string::npos);
  CHECK(read_jsonl(session_dir(f, "named") / "queue.jsonl").size() == 1);
  auto interrupt = run_troupe({"interrupt", name}, f.options());
  CHECK(interrupt.exit_code == 1); // found by its name, but it does not run
  CHECK(interrupt.err.find("session named is not running") != std::string::npos);

  // A session in its first moments: its control endpoint is up, its transcript not yet.
  std::filesystem::create_directories(session_dir(f, "starting"));
  write_file(session_dir(f, "starting") / "control.json",
             R"({"version": 2, "socket": "control.sock", "token": "t", "pid": 999999999})" "\n");
  auto starting = run_troupe({"notify", "starting", "early news"}, f.options());
  CHECK(starting.exit_code == 0);
  CHECK(read_jsonl(session_dir(f, "starting") / "queue.jsonl").size() == 1);
}

TEST_CASE("notify: an unknown session, a missing message and a full queue are errors") {
  cli_fixture f;
  auto unknown = run_troupe({"notify", "nosuch", "hello"}, f.options());
  CHECK(unknown.exit_code == 1);
  CHECK(unknown.err.find("unknown session 'nosuch'") != std::string::npos);
  CHECK(!std::filesystem::exists(session_dir(f, "nosuch")));

  REQUIRE(f.run({"--model", f.script({text_line("ok")}), "--session-id", "s2", "hi"})
            .exit_code == 0);
  auto queue = session_dir(f, "s2") / "queue.jsonl";
  // An empty message is refused before any session is looked up or written to.
  for (auto* target : {"s2", "nosuch"}) {
    auto empty = run_troupe({"notify", target, ""}, f.options());
    CHECK(empty.exit_code == 2);
    CHECK(empty.err.find("no message: give it as arguments or on stdin") != std::string::npos);
  }
  CHECK(read_file(queue).empty());
  for (int i = 0; i < 100; ++i) {
    task_notification n;
    n.id = "ntf_" + std::to_string(i);
    n.text = "entry " + std::to_string(i);
    REQUIRE(append_notification(queue, n));
  }
  auto full = run_troupe({"notify", "s2", "one too many"}, f.options());
  CHECK(full.exit_code == 1);
  CHECK(full.err.find("is full (100 undelivered entries)") != std::string::npos);
  CHECK(read_jsonl(queue).size() == 100); // nothing dropped, nothing added
}

TEST_CASE("a waiting session takes a notify at once and ends after its idle timeout") {
  cli_fixture f;
  auto model = f.script({text_line("first"), text_line("got it")});
  auto run = start_live(f, {"--model", model, "--wait-notifications", "--idle-timeout", "2",
                            "--output-format", "stream-json", "hi"},
                        "live");
  auto notify = run_troupe({"notify", "live", "ping"}, f.options());
  CHECK(notify.exit_code == 0);
  CHECK(notify.out.find("delivered to the running session live") != std::string::npos);
  auto r = run.get();
  CHECK(r.exit_code == 0);
  auto log = read_jsonl(session_dir(f, "live") / "transcript.jsonl");
  REQUIRE(log.size() == 4);
  CHECK(log[2]["origin"] == "task-notification");
  CHECK(log[3]["content"] == "got it");
  CHECK(!std::filesystem::exists(session_dir(f, "live") / "control.json"));
}

TEST_CASE("the control endpoint refuses a message without the right token") {
  cli_fixture f;
  auto run = start_live(f, {"--model", f.script({text_line("hi", 5000)}), "go"}, "guarded");
  auto control = session_dir(f, "guarded") / "control.json";
  auto file = json::parse(read_file(control));
  CHECK((std::filesystem::status(control).permissions() & std::filesystem::perms::all) ==
        (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write));
  auto real = file;
  file["token"] = std::string(32, '0');
  write_file(control, file.dump());
  auto refused = run_troupe({"interrupt", "guarded"}, f.options());
  CHECK(refused.exit_code == 1);
  CHECK(refused.err.find("refused: wrong token") != std::string::npos);
  write_file(control, real.dump());
  auto accepted = run_troupe({"interrupt", "guarded"}, f.options());
  CHECK(accepted.exit_code == 0);
  CHECK(run.get().exit_code == 130);
}

TEST_CASE("troupe interrupt stops a generation from another process at once") {
  cli_fixture f;
  auto run = start_live(f, {"--model", f.script({text_line("slow", 20000)}),
                            "--output-format", "stream-json", "go"},
                        "busy");
  auto sent = std::chrono::steady_clock::now();
  auto r = run_troupe({"interrupt", "busy"}, f.options());
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("interrupted") != std::string::npos);
  auto result = run.get();
  CHECK(std::chrono::steady_clock::now() - sent < std::chrono::seconds{3});
  CHECK(result.exit_code == 130);
  auto idle = run_troupe({"interrupt", "busy"}, f.options());
  CHECK(idle.exit_code == 1); // the session is gone
  CHECK(idle.err.find("not running") != std::string::npos);
}

TEST_CASE("troupe background moves a foreground subagent to the background") {
  cli_fixture f;
  write_script(f.dir / "work/child.jsonl", {text_line("child result", 1500)});
  auto parent = f.script(
    {{{"tool_calls", json::array({{{"name", "task"},
                                   {"input", {{"prompt", "slow job"},
                                              {"model", "scripted:child.jsonl"}}}}})}},
     text_line("parent goes on"), text_line("child reported")});
  auto run = start_live(f, {"--model", parent, "go"}, "fg");
  auto agents = session_dir(f, "fg") / "agents";
  // The directory can exist a moment before the agent's own directory is made in it.
  REQUIRE(wait_until([&] {
    std::error_code ec;
    return !std::filesystem::is_empty(agents, ec) && !ec;
  }));
  auto agent_id = std::filesystem::directory_iterator(agents)->path().filename().string();
  auto moved = run_troupe({"background", agent_id}, f.options());
  CHECK(moved.exit_code == 0);
  CHECK(moved.out.find("moved agent " + agent_id + " to the background") != std::string::npos);
  CHECK(run.get().exit_code == 0);
  auto log = read_jsonl(session_dir(f, "fg") / "transcript.jsonl");
  REQUIRE(log.size() == 6);
  CHECK(log[2]["content"].get<std::string>().find("Moved agent " + agent_id) == 0);
  CHECK(log[3]["content"] == "parent goes on");
  CHECK(log[4]["origin"] == "task-notification");
  CHECK(log[4]["content"].get<std::string>().find("child result") != std::string::npos);
  auto unknown = run_troupe({"background", "agent_nosuch"}, f.options());
  CHECK(unknown.exit_code == 1);
}

TEST_CASE("troupe interrupt AGENT_ID interrupts that subagent, the parent goes on") {
  cli_fixture f;
  // A grandchild too, reached through the top-level session's endpoint (agents/X/agents/Y).
  write_script(f.dir / "work/inner.jsonl", {text_line("inner result", 20000)});
  write_script(f.dir / "work/child.jsonl",
               {{{"tool_calls", json::array({{{"name", "task"},
                                              {"input", {{"prompt", "inner job"},
                                                         {"model", "scripted:inner.jsonl"}}}}})}},
                text_line("child saw the inner agent stop")});
  auto parent = f.script(
    {{{"tool_calls", json::array({{{"name", "task"},
                                   {"input", {{"prompt", "slow job"},
                                              {"model", "scripted:child.jsonl"}}}}})}},
     text_line("parent goes on")});
  auto run = start_live(f, {"--model", parent, "go"}, "tree");
  std::filesystem::path inner_dir;
  REQUIRE(wait_until([&] {
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(session_dir(f, "tree"), ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
      if (it->path().parent_path().filename() == "agents" &&
          it->path().parent_path().parent_path().parent_path().filename() == "agents")
        inner_dir = it->path();
    return !inner_dir.empty();
  }, std::chrono::seconds{10}));
  auto inner_id = inner_dir.filename().string();
  // Listed below its parent while it runs.
  auto listed = run_troupe({"ls", "--all", "--json"}, f.options());
  bool seen = false;
  for (auto& line : split_lines(listed.out)) {
    auto j = json::parse(line);
    if (j["id"] == inner_id) {
      seen = true;
      CHECK(j["depth"] == 2);
      CHECK(j["state"] == "running");
    }
  }
  CHECK(seen);
  auto stopped = run_troupe({"interrupt", inner_id}, f.options());
  CHECK(stopped.exit_code == 0);
  auto result = run.get();
  CHECK(result.exit_code == 0);
  auto child_log = read_jsonl(inner_dir.parent_path().parent_path() / "transcript.jsonl");
  REQUIRE(child_log.size() >= 3);
  CHECK(child_log.back()["content"] == "child saw the inner agent stop");
  auto log = read_jsonl(session_dir(f, "tree") / "transcript.jsonl");
  CHECK(log.back()["content"] == "parent goes on");
  CHECK(read_json(inner_dir / "session.json")["state"] == "interrupted");
  auto gone = run_troupe({"interrupt", inner_id}, f.options());
  CHECK(gone.exit_code == 1);
  CHECK(gone.err.find("the session that runs " + inner_id + " is not running") !=
        std::string::npos);
}

TEST_CASE("a subagent that does not complete tells its parent why, and what it last said") {
  cli_fixture f;
  json step = {{"text", "starting"},
               {"tool_calls", json::array({{{"name", "shell"}, {"input", {{"command", "true"}}}}})}};
  write_script(f.dir / "work/erring.jsonl",
               {step, {{"error", {{"status", 500}, {"message", "model exploded"}}}}});
  write_script(f.dir / "work/capped.jsonl", {step, text_line("never reached")});
  json refused = {{"text", "removing"},
                  {"tool_calls", json::array({{{"name", "shell"}, {"input", {{"command", "rm x"}}}}})}};
  write_script(f.dir / "work/blocked.jsonl", {refused, text_line("done")});
  auto launch = [](const std::string& script, const std::string& mode, int max_steps) {
    json input = {{"prompt", "work"}, {"model", "scripted:" + script}, {"mode", mode}};
    if (max_steps > 0)
      input["max_steps"] = max_steps;
    return json{{"name", "task"}, {"input", input}};
  };
  auto parent = f.script({{{"tool_calls", json::array({launch("erring.jsonl", "foreground", 0),
                                                       launch("capped.jsonl", "foreground", 1),
                                                       launch("erring.jsonl", "background", 0),
                                                       launch("blocked.jsonl", "foreground", 0)})}},
                          text_line("seen"), text_line("seen too")});
  auto r = f.run({"--model", parent, "--session-id", "why", "--deny", "shell(rm *)", "go"});
  CHECK(r.exit_code == 0);
  auto log = read_jsonl(session_dir(f, "why") / "transcript.jsonl");
  std::vector<std::string> results;
  std::string notification;
  for (auto& m : log) {
    if (m["role"] == "tool")
      results.push_back(m["content"]);
    if (m.value("origin", "") == "task-notification")
      notification = m["content"];
  }
  REQUIRE(results.size() == 4);
  CHECK(results[0].rfind("[the agent ended error: ", 0) == 0);
  CHECK(results[0].find("model exploded") != std::string::npos);
  CHECK(results[0].find("\nIts last reply:\nstarting") != std::string::npos);
  // Without an error, a capped or refused agent still says what stopped it.
  CHECK(results[1].rfind("[the agent ended max_turns: reached the maximum of 1 steps", 0) == 0);
  CHECK(results[3].rfind("[the agent ended permission_blocked: shell was refused: ", 0) == 0);
  CHECK(results[3].find("rm") != std::string::npos);
  CHECK(results[1].find("Its last reply:\nstarting") != std::string::npos);
  CHECK(notification.find("<status>failed</status>") != std::string::npos);
  CHECK(notification.find("<reason>error</reason>") != std::string::npos);
  CHECK(notification.find("[the agent ended error: ") != std::string::npos);
  CHECK(notification.find("model exploded") != std::string::npos);
  // The notification and the agent's own session.json agree on how it ended.
  for (auto& m : log)
    if (m.value("origin", "") == "task-notification") {
      auto id = m["meta"]["task_id"].get<std::string>();
      auto info = read_json(session_dir(f, "why") / "agents" / id / "session.json");
      CHECK(m["meta"]["reason"] == info["state"]);
      CHECK(info["state"] == "error");
    }
}

TEST_CASE("a run that ends while background agents run says which it stopped") {
  cli_fixture f;
  write_script(f.dir / "work/child.jsonl", {text_line("child done", 20000)});
  json launch = {{"name", "task"},
                 {"input", {{"prompt", "long job"}, {"description", "the long job"},
                            {"mode", "background"}, {"model", "scripted:child.jsonl"}}}};
  // The parent completes 300 ms later: the agent has started by then (launches are answered
  // before agents are spawned, and one stopped before it started has no session.json).
  auto complete = json{{"tool_calls", json::array({{{"name", "complete"},
                                                    {"input", {{"summary", "done"}}}}})},
                       {"delay_ms", 300}};
  auto parent = f.script({{{"tool_calls", json::array({launch})}}, complete});
  // Text: the line under the result names the agent.
  auto text = f.run({"--model", parent, "--session-id", "left-text", "go"});
  CHECK(text.exit_code == 0);
  CHECK(text.out.find("stopped: agent agent_") != std::string::npos);
  CHECK(text.out.find("(the long job)") != std::string::npos);
  // stream-json: the result event lists it.
  auto json_run = f.run({"--model", f.script({{{"tool_calls", json::array({launch})}}, complete}),
                         "--session-id", "left-json", "--output-format", "stream-json", "go"});
  CHECK(json_run.exit_code == 0);
  json result;
  std::istringstream lines{json_run.out};
  for (std::string line; std::getline(lines, line);)
    if (line.find("\"type\":\"result\"") != std::string::npos)
      result = json::parse(line);
  REQUIRE(result.contains("agents_left"));
  REQUIRE(result["agents_left"].size() == 1);
  CHECK(result["agents_left"][0]["description"] == "the long job");
  CHECK(result["agents_left"][0]["state"] == "stopped");
  auto id = result["agents_left"][0]["agent_id"].get<std::string>();
  CHECK(id.rfind("agent_", 0) == 0);
  // What the agent says of itself agrees, in plain words.
  auto queue = read_jsonl(session_dir(f, "left-json") / "queue.jsonl");
  REQUIRE(queue.size() == 1);
  CHECK(queue[0]["status"] == "stopped");
  CHECK(queue[0]["reason"] == "interrupted");
  CHECK(queue[0]["text"].get<std::string>().find("exit_reason") == std::string::npos);
  auto info = read_json(session_dir(f, "left-json") / "agents" / id / "session.json");
  CHECK(info["state"] == "interrupted");
}

TEST_CASE("task_wait through a run: the parent waits for its agents in one call") {
  cli_fixture f;
  write_script(f.dir / "work/a.jsonl", {text_line("alpha result", 300)});
  write_script(f.dir / "work/b.jsonl", {text_line("beta result", 100)});
  auto bg = [](const std::string& script) {
    return json{{"name", "task"},
                {"input", {{"prompt", script}, {"mode", "background"},
                           {"model", "scripted:" + script}}}};
  };
  auto parent = f.script({{{"tool_calls", json::array({bg("a.jsonl"), bg("b.jsonl")})}},
                          {{"tool_calls", json::array({{{"name", "task_wait"},
                                                        {"input", {{"timeout", 30}}}}})}},
                          text_line("both back")});
  auto r = f.run({"--model", parent, "--session-id", "tw", "go"});
  CHECK(r.exit_code == 0);
  auto log = read_jsonl(session_dir(f, "tw") / "transcript.jsonl");
  std::string waited;
  size_t notifications = 0;
  for (auto& m : log) {
    if (m["role"] == "tool" && m["content"].get<std::string>().find("agent(s) ended") !=
                                 std::string::npos)
      waited = m["content"];
    notifications += m.value("origin", "") == "task-notification" ? 1 : 0;
  }
  CHECK(waited.find("alpha result") != std::string::npos);
  CHECK(waited.find("beta result") != std::string::npos);
  CHECK(waited.find("2 of 2 agent(s) ended") != std::string::npos);
  CHECK(notifications == 0);
  CHECK(log.back()["content"] == "both back");
}

TEST_CASE("troupe interrupt ends a run that waits for notifications, exit 130") {
  cli_fixture f;
  auto run = start_live(f, {"--model", f.script({text_line("first")}), "--wait-notifications",
                            "hi"},
                        "waiting");
  REQUIRE(wait_until([&] {
    return read_jsonl(session_dir(f, "waiting") / "transcript.jsonl").size() == 2;
  }));
  auto r = run_troupe({"interrupt", "waiting"}, f.options());
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("interrupted: the run ended") != std::string::npos);
  CHECK(run.get().exit_code == 130);
}

TEST_CASE("waiting for notifications keeps a run's exit codes") {
  cli_fixture f;
  auto capped = f.run({"--model", f.script({text_line("```shell\ntrue\n```"), text_line("x")}),
                       "--wait-notifications", "--max-steps", "1", "go"});
  CHECK(capped.exit_code == 3);
}

TEST_CASE("past the depth cap the task tool answers with the cap, not an unknown tool") {
  cli_fixture f;
  // The child (depth 1, the cap) tries to launch a grandchild.
  write_script(f.dir / "work/child.jsonl",
               {{{"tool_calls", json::array({{{"name", "task"},
                                              {"input", {{"prompt", "deeper"},
                                                         {"model", "scripted:child.jsonl"}}}}})}},
                text_line("could not go deeper")});
  auto parent = f.script(
    {{{"tool_calls", json::array({{{"name", "task"},
                                   {"input", {{"prompt", "go deep"},
                                              {"model", "scripted:child.jsonl"}}}}})}},
     text_line("done")});
  auto r = f.run({"--model", parent, "--max-agent-depth", "1", "--session-id", "deep", "go"});
  CHECK(r.exit_code == 0);
  auto agents = session_dir(f, "deep") / "agents";
  auto child = std::filesystem::directory_iterator(agents)->path();
  auto log = read_jsonl(child / "transcript.jsonl");
  REQUIRE(log.size() == 4);
  CHECK(log[2]["is_error"] == true);
  CHECK(log[2]["content"].get<std::string>().find("the limit is 1") != std::string::npos);
}

TEST_CASE("with --let-agents-finish the run waits for its agents, and an interrupt stops them") {
  cli_fixture f;
  write_script(f.dir / "work/child.jsonl", {text_line("child done", 20000)});
  auto parent = f.script(
    {{{"tool_calls", json::array({{{"name", "task"},
                                   {"input", {{"prompt", "long job"}, {"mode", "background"},
                                              {"model", "scripted:child.jsonl"}}}}})}},
     {{"tool_calls", json::array({{{"name", "complete"}, {"input", {{"summary", "parent done"}}}}})}}});
  process_options opts;
  opts.interrupt_after = std::chrono::milliseconds{1500};
  auto start = std::chrono::steady_clock::now();
  auto r = f.run({"--model", parent, "--let-agents-finish", "--session-id", "lf", "go"}, opts);
  CHECK(r.exit_code == 0); // the parent had completed
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds{8});
  auto queue = read_jsonl(session_dir(f, "lf") / "queue.jsonl");
  REQUIRE(queue.size() == 1);
  CHECK(queue[0]["source"] == "agent");
  CHECK(queue[0]["status"] == "stopped");
  CHECK(queue[0]["description"] == "long job"); // the child's own report carries it
}

TEST_CASE("a background shell task the run's end stops is in the queue when the process exits") {
  cli_fixture f;
  auto parent = f.script(
    {{{"tool_calls", json::array({{{"name", "shell"},
                                   {"input", {{"command", "sleep 30"},
                                              {"run_in_background", true}}}}})}},
     text_line("left it running")});
  auto r = f.run({"--model", parent, "--session-id", "bg", "go"});
  CHECK(r.exit_code == 0);
  // Read at once: the process has exited, so the entry was written before it did.
  auto queue = read_jsonl(session_dir(f, "bg") / "queue.jsonl");
  REQUIRE(queue.size() == 1);
  CHECK(queue[0]["source"] == "shell");
  CHECK(queue[0]["status"] == "stopped");
  CHECK(queue[0]["description"] == "sleep 30");
}
