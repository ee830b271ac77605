// The defaults README.md states, each tested through the shipped configuration: troupe runs as a
// user would run it, without the flag, variable or setting that would set the value.

#include <doctest/doctest.h>

#include <tuple>

#include "support/cli_fixture.hpp"
#include "support/provider_run.hpp"

using namespace troupe::test;
using nlohmann::json;

namespace {

json call(const std::string& tool, json input) {
  return {{"name", tool}, {"input", std::move(input)}};
}

json calls(json list) { return {{"tool_calls", std::move(list)}}; }

json shell_reply(const std::string& command) {
  return calls(json::array({call("shell", {{"command", command}})}));
}

/// The tool results of a transcript, in the order they were logged.
std::vector<json> tool_results(const std::filesystem::path& transcript) {
  std::vector<json> out;
  for (auto& m : read_jsonl(transcript))
    if (m["role"] == "tool")
      out.push_back(m);
  return out;
}

/// The one subagent directory under `dir`/agents.
std::filesystem::path only_agent(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> found;
  for (auto& entry : std::filesystem::directory_iterator(dir / "agents"))
    found.push_back(entry.path());
  REQUIRE(found.size() == 1);
  return found[0];
}

size_t count_of(const std::string& text, const std::string& piece) {
  size_t n = 0;
  for (auto at = text.find(piece); at != std::string::npos; at = text.find(piece, at + 1))
    ++n;
  return n;
}

/// A session "s1" that ran once and stopped, for `troupe notify` to queue into.
std::filesystem::path stopped_session(cli_fixture& f) {
  REQUIRE(f.run({"--model", f.script({text_line("first")}), "--session-id", "s1", "hi"})
            .exit_code == 0);
  return session_dir(f, "s1") / "queue.jsonl";
}

} // namespace

TEST_CASE("by default a notification over 1 MiB is refused: exit 2, nothing written") {
  cli_fixture f;
  auto queue = stopped_session(f);
  // On stdin, as a script would pipe a log in; neither --max-bytes nor
  // TROUPE_MAX_NOTIFICATION_BYTES (run_troupe drops an inherited one).
  auto over_opts = f.options();
  over_opts.stdin_text = std::string(1048577, 'x');
  auto over = run_troupe({"notify", "s1"}, over_opts);
  CHECK(over.exit_code == 2);
  CHECK(over.err == "troupe: the notification is longer than 1048576 bytes (--max-bytes, "
                    "TROUPE_MAX_NOTIFICATION_BYTES); nothing was sent\n");
  CHECK(over.out.empty());
  CHECK(!std::filesystem::exists(queue));

  auto exact_opts = f.options();
  exact_opts.stdin_text = std::string(1048576, 'y');
  auto exact = run_troupe({"notify", "s1"}, exact_opts);
  CHECK(exact.exit_code == 0);
  auto queued = read_jsonl(queue);
  REQUIRE(queued.size() == 1);
  CHECK(queued[0]["text"].get<std::string>() == std::string(1048576, 'y'));
}

TEST_CASE("notify --max-bytes goes up to 64 MiB: one byte more is exit 2 with a clear message") {
  cli_fixture f;
  auto queue = stopped_session(f);
  auto over = run_troupe({"notify", "s1", "--max-bytes", "67108865", "hello"}, f.options());
  CHECK(over.exit_code == 2);
  CHECK(over.err == "troupe: invalid --max-bytes '67108865': expected a whole number of bytes "
                    "from 1 to 67108864\n");
  CHECK(!std::filesystem::exists(queue));
  auto ceiling = run_troupe({"notify", "s1", "--max-bytes", "67108864", "hello"}, f.options());
  CHECK(ceiling.exit_code == 0);
  CHECK(read_jsonl(queue).size() == 1);
}

TEST_CASE("by default subagents nest 3 deep: a launch three levels down answers with the cap") {
  cli_fixture f;
  // Each level launches the next in the foreground; level 4 would answer if it were allowed.
  auto level = [&](int n) {
    auto next = "scripted:level" + std::to_string(n + 1) + ".jsonl";
    return std::vector<json>{
      calls(json::array({call("task", {{"prompt", "go to level " + std::to_string(n + 1)},
                                       {"model", next}})})),
      text_line("level " + std::to_string(n) + " done")};
  };
  for (int n = 1; n <= 3; ++n)
    write_script(f.dir / ("work/level" + std::to_string(n) + ".jsonl"), level(n));
  write_script(f.dir / "work/level4.jsonl", {text_line("level 4 ran")});
  auto r = f.run({"--model", f.script(level(0)), "--session-id", "deep", "go"});
  CHECK(r.exit_code == 0);

  auto one = only_agent(session_dir(f, "deep"));
  auto two = only_agent(one);
  auto three = only_agent(two);
  auto deeper = three / "agents"; // no level 4
  CHECK((!std::filesystem::exists(deeper) || std::filesystem::is_empty(deeper)));
  // Levels 1 and 2 launched their child; level 3, at the cap, got the cap's error.
  std::vector<std::pair<std::filesystem::path, std::string>> launched{{one, "level 2 done"},
                                                                     {two, "level 3 done"}};
  for (auto& [dir, child_answer] : launched) {
    auto results = tool_results(dir / "transcript.jsonl");
    REQUIRE(results.size() == 1);
    CHECK(results[0].value("is_error", false) == false);
    CHECK(results[0]["content"] == child_answer);
  }
  auto at_cap = tool_results(three / "transcript.jsonl");
  REQUIRE(at_cap.size() == 1);
  CHECK(at_cap[0]["is_error"] == true);
  CHECK(at_cap[0]["content"] ==
        "cannot launch a subagent: this agent is at depth 3 and the limit is 3 (raise it with "
        "--max-agent-depth); do the work yourself");
  auto top = tool_results(session_dir(f, "deep") / "transcript.jsonl");
  REQUIRE(top.size() == 1);
  CHECK(top[0]["content"] == "level 1 done");
}

TEST_CASE("by default an agent runs at most 20 subagents at once: the 21st launch names the limit") {
  cli_fixture f;
  // Children that would take 60 s: all still run when the 21st is asked for; `complete` then
  // ends the run and stops them (well before their 60 s: they were not waited for).
  write_script(f.dir / "work/child.jsonl", {text_line("child done", 60000)});
  json launches = json::array();
  for (int i = 1; i <= 21; ++i)
    launches.push_back(call("task", {{"prompt", "job " + std::to_string(i)},
                                     {"mode", "background"},
                                     {"model", "scripted:child.jsonl"}}));
  // `complete` comes 300 ms later: the agents have started by then (they are spawned after
  // their launches are answered, from a timer message).
  auto complete = calls(json::array({call("complete", {{"summary", "enough"}})}));
  complete["delay_ms"] = 300;
  auto parent = f.script({calls(launches), complete});
  auto start = std::chrono::steady_clock::now();
  auto r = f.run({"--model", parent, "--session-id", "many", "go"});
  CHECK(r.exit_code == 0);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds{40});
  auto results = tool_results(session_dir(f, "many") / "transcript.jsonl");
  REQUIRE(results.size() >= 21);
  for (int i = 0; i < 20; ++i) {
    CAPTURE(i);
    CHECK(results[i]["content"].get<std::string>().rfind("Started agent agent_", 0) == 0);
  }
  CHECK(results[20]["is_error"] == true);
  CHECK(results[20]["content"] ==
        "cannot launch a subagent: the limit of 20 running at once is reached (raise it with "
        "--max-agents); wait for a <task-notification> first");
  // Launches are answered before the agents are spawned: one the run's end stopped before it
  // started has no directory (its end is in the queue), and the refused 21st never has one.
  size_t agents = 0;
  for ([[maybe_unused]] auto& entry :
       std::filesystem::directory_iterator(session_dir(f, "many") / "agents"))
    ++agents;
  CHECK(agents >= 1);
  CHECK(agents <= 20);
}

TEST_CASE("with only one provider's key and no --model the model is that provider's default") {
  struct provider_default {
    std::string key, base_url, url_path, model, request_path, wire_model;
  };
  for (auto& p : {provider_default{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "",
                                   "anthropic/claude-sonnet-4-5", "/v1/messages",
                                   "claude-sonnet-4-5"},
                  provider_default{"OPENAI_API_KEY", "OPENAI_BASE_URL", "/v1", "openai/gpt-4.1",
                                   "/v1/chat/completions", "gpt-4.1"}}) {
    CAPTURE(p.key);
    fake_server server{R"([{"text": "hello from the default"}])"};
    cli_fixture f;
    auto opts = f.options(); // TROUPE_MODEL and both keys unset
    opts.env[p.key] = "test-key";
    opts.env[p.base_url] = server.url() + p.url_path;
    auto r = run_troupe({"run", "--cwd", (f.dir / "work").string(), "--output-format",
                         "stream-json", "go"},
                        opts);
    CHECK(r.exit_code == 0);
    auto lines = lines_of(r.out);
    REQUIRE(!lines.empty());
    CHECK(lines.front()["model"] == p.model);
    CHECK(result_of(r)["result"] == "hello from the default");
    auto requests = server.requests();
    REQUIRE(requests.size() == 1);
    CHECK(requests[0]["path"] == p.request_path);
    CHECK(requests[0]["body"]["model"] == p.wire_model);
  }
}

TEST_CASE("without --cwd the workspace is the current directory: tools run there") {
  cli_fixture f;
  auto workspace = std::filesystem::canonical(f.dir / "work");
  auto opts = f.options();
  opts.cwd = workspace; // where troupe is started; no --cwd below
  auto model = f.script({shell_reply("pwd > where.txt"), text_line("noted")});
  auto r = run_troupe({"run", "--model", model, "--output-format", "stream-json",
                       "--permission-mode", "accept-edits", "--allow", "shell", "go"},
                      opts);
  CHECK(r.exit_code == 0);
  auto lines = lines_of(r.out);
  REQUIRE(!lines.empty());
  CHECK(lines.front()["cwd"] == workspace.string());
  CHECK(read_file(workspace / "where.txt") == workspace.string() + "\n");
  auto listed = run_troupe({"ls", "--json"}, f.options());
  REQUIRE(split_lines(listed.out).size() == 1);
  CHECK(json::parse(split_lines(listed.out)[0])["cwd"] == workspace.string());
}

TEST_CASE("continuing a session by --session-id restores its counters from state.json") {
  cli_fixture f;
  REQUIRE(f.run({"--model", f.script({shell_reply("true"), text_line("first done")}),
                 "--session-id", "again", "one"})
            .exit_code == 0);
  auto state_path = session_dir(f, "again") / "state.json";
  auto first = read_json(state_path);
  CHECK(first["turn_count"] == 1);
  CHECK(first["total_steps"] == 2);
  REQUIRE(f.run({"--model", f.script({text_line("second done")}), "--session-id", "again",
                 "two"})
            .exit_code == 0);
  auto second = read_json(state_path);
  CHECK(second["turn_count"] == 2);
  CHECK(second["total_steps"] == 3); // 2 + 1
  CHECK(second["step_count"] == 1);  // per turn: not carried over
  CHECK(second["messages_count"] == 6);
}

TEST_CASE("troupe ls shows crashed for a session that says running but whose lock nobody holds") {
  cli_fixture f;
  REQUIRE(f.run({"--model", f.script({text_line("ok")}), "--session-id", "died", "hi"})
            .exit_code == 0);
  // The on-disk state of a process killed mid-run: session.json still says running, and its
  // lock went with the process.
  auto info_path = session_dir(f, "died") / "session.json";
  auto info = read_json(info_path);
  REQUIRE(info["state"] == "completed");
  info["state"] = "running";
  write_file(info_path, info.dump());
  REQUIRE(std::filesystem::exists(session_dir(f, "died") / "session.lock"));

  auto listed = run_troupe({"ls", "--json"}, f.options());
  CHECK(listed.exit_code == 0);
  auto lines = split_lines(listed.out);
  REQUIRE(lines.size() == 1);
  auto line = json::parse(lines[0]);
  CHECK(line["id"] == "died");
  CHECK(line["state"] == "crashed");
  CHECK(line["live"] == false);
  auto table = run_troupe({"ls"}, f.options());
  REQUIRE(split_lines(table.out).size() == 2);
  CHECK(split_lines(table.out)[1].find(" crashed ") != std::string::npos);
}

TEST_CASE("by default 408, 409, 502 and 504 are retried, for both providers") {
  for (std::string provider : {"openai", "anthropic"}) {
    CAPTURE(provider);
    fake_server server{R"([{"status": 408, "headers": {"retry-after-ms": "1"}},
                           {"status": 409, "headers": {"retry-after-ms": "1"}},
                           {"status": 502, "headers": {"retry-after-ms": "1"}},
                           {"status": 504, "headers": {"retry-after-ms": "1"}},
                           {"text": "got through"}])"};
    provider_run run{provider};
    auto r = run.run(server, {"go"});
    CHECK(r.exit_code == 0);
    CHECK(result_of(r)["result"] == "got through");
    std::vector<int> statuses;
    for (auto& retry : of_type(r, "system", "api_retry"))
      statuses.push_back(retry["error_status"].get<int>());
    CHECK(statuses == std::vector<int>{408, 409, 502, 504});
    CHECK(server.requests().size() == 5);
  }
}

TEST_CASE("by default glob lists at most 1,000 paths and says how many more match") {
  cli_fixture f;
  auto make = [&](const std::string& dir, int n) {
    std::filesystem::create_directories(f.dir / "work" / dir);
    for (int i = 0; i < n; ++i)
      write_file(f.dir / "work" / dir / ("f" + std::to_string(i) + ".txt"), "");
  };
  make("exact", 1000);
  make("over", 1001);
  auto glob_in = [](const std::string& dir) {
    return call("glob", {{"pattern", "*.txt"}, {"path", dir}});
  };
  auto model =
    f.script({calls(json::array({glob_in("exact"), glob_in("over")})), text_line("listed")});
  auto r = f.run({"--model", model, "--session-id", "globbed", "go"});
  REQUIRE(r.exit_code == 0);
  auto results = tool_results(session_dir(f, "globbed") / "transcript.jsonl");
  REQUIRE(results.size() == 2);
  auto exact = results[0]["content"].get<std::string>();
  CHECK(count_of(exact, ".txt\n") == 1000);
  CHECK(exact.find("more files match") == std::string::npos);
  auto over = results[1]["content"].get<std::string>();
  CHECK(count_of(over, ".txt\n") == 1000);
  CHECK(over.find("[1 more files match; narrow the pattern or the path]") != std::string::npos);
  CHECK(results[1]["truncated"] == true);
}

TEST_CASE("by default grep stops at 500 matches and says so") {
  cli_fixture f;
  auto lines = [](int n) {
    std::string text;
    for (int i = 0; i < n; ++i)
      text += "hit " + std::to_string(i) + "\n";
    return text;
  };
  write_file(f.dir / "work/exact.txt", lines(500));
  write_file(f.dir / "work/over.txt", lines(501));
  auto grep_in = [](const std::string& file) {
    return call("grep", {{"pattern", "hit"}, {"path", file}});
  };
  auto model = f.script(
    {calls(json::array({grep_in("exact.txt"), grep_in("over.txt")})), text_line("searched")});
  auto r = f.run({"--model", model, "--session-id", "grepped", "go"});
  REQUIRE(r.exit_code == 0);
  auto results = tool_results(session_dir(f, "grepped") / "transcript.jsonl");
  REQUIRE(results.size() == 2);
  auto exact = results[0]["content"].get<std::string>();
  CHECK(count_of(exact, ":hit ") == 500);
  CHECK(exact.find("[stopped at") == std::string::npos);
  auto over = results[1]["content"].get<std::string>();
  CHECK(count_of(over, ":hit ") == 500);
  CHECK(over.find("over.txt:500:hit 499\n") != std::string::npos);
  CHECK(over.find("[stopped at 500 matches; narrow the pattern, the path or the glob]") !=
        std::string::npos);
  CHECK(results[1]["truncated"] == true);
}

TEST_CASE("by default a command's output is kept up to 10 MiB, past that its first and last 5 MiB") {
  cli_fixture f;
  // Exactly 10 MiB is saved whole; one byte more loses one byte from the middle.
  auto bytes = [](long n) {
    return "printf HEAD; head -c " + std::to_string(n - 8) + " /dev/zero | tr '\\0' x; printf TAIL";
  };
  auto model = f.script({shell_reply(bytes(10485760)), shell_reply(bytes(10485761)),
                         text_line("seen")});
  auto r = f.run({"--model", model, "--session-id", "big", "go"});
  REQUIRE(r.exit_code == 0);
  auto results = tool_results(session_dir(f, "big") / "transcript.jsonl");
  REQUIRE(results.size() == 2);
  std::vector<std::string> saved;
  for (auto& result : results) {
    auto content = result["content"].get<std::string>();
    auto at = content.find("the whole output is in ");
    REQUIRE(at != std::string::npos);
    auto path = content.substr(at + 23, content.find(" ...]", at) - at - 23);
    saved.push_back(read_file(path));
  }
  CHECK(saved[0].size() == 10485760);
  CHECK(saved[0].find("bytes of output cut") == std::string::npos);
  CHECK(saved[0].rfind("HEAD", 0) == 0);
  CHECK(saved[0].substr(saved[0].size() - 4) == "TAIL");
  auto note = std::string{"\n[... 1 bytes of output cut; 10485761 bytes in all ...]\n"};
  CHECK(saved[1].size() == 10485760 + note.size());
  CHECK(saved[1].find(note) == 5242880);
  CHECK(saved[1].rfind("HEAD", 0) == 0);
  CHECK(saved[1].substr(saved[1].size() - 4) == "TAIL");
}

TEST_CASE("by default sessions live in ~/.local/share/troupe and settings come from ~/.config") {
  cli_fixture f;
  // Neither TROUPE_HOME nor XDG_CONFIG_HOME: both follow HOME. A deny rule in the user's
  // settings file holds, and the session is where `ls` finds it.
  auto home = f.dir / "user";
  std::filesystem::create_directories(home / ".config/troupe");
  write_file(home / ".config/troupe/settings.json",
             R"json({"permissions": {"deny": ["shell(touch *)"]}})json");
  process_options opts;
  opts.env["HOME"] = home.string();
  opts.env["XDG_CONFIG_HOME"] = "";
  auto r = run_troupe({"run", "--cwd", (f.dir / "work").string(), "--permission-mode", "bypass",
                       "--model", f.script({shell_reply("touch made"), text_line("never")}),
                       "--session-id", "homed", "go"},
                      opts);
  CHECK(r.exit_code == 4); // the refusal ends a headless run permission_blocked
  CHECK(!std::filesystem::exists(f.dir / "work/made"));
  auto dir = home / ".local/share/troupe/sessions/homed";
  REQUIRE(std::filesystem::exists(dir / "transcript.jsonl"));
  auto results = tool_results(dir / "transcript.jsonl");
  REQUIRE(results.size() == 1);
  CHECK(results[0]["content"].get<std::string>().find("denied by the rule shell(touch *)") !=
        std::string::npos);
  auto listed = run_troupe({"ls", "--json"}, opts);
  REQUIRE(split_lines(listed.out).size() == 1);
  CHECK(json::parse(split_lines(listed.out)[0])["id"] == "homed");
}

TEST_CASE("the agent caps have hard limits: past them an error names the limit, never a clamp") {
  cli_fixture f;
  auto model = f.script({text_line("never")});
  for (auto [flag, value, variable, range] :
       {std::tuple<std::string, std::string, std::string, std::string>{
          "--max-agents", "1001", "TROUPE_MAX_AGENTS", "agents from 1 to 1000"},
        {"--max-agent-depth", "11", "TROUPE_MAX_AGENT_DEPTH", "levels from 0 to 10"}}) {
    CAPTURE(flag);
    auto by_flag = f.run({"--model", model, flag, value, "go"});
    CHECK(by_flag.exit_code == 2);
    CHECK(by_flag.err == "troupe: invalid " + flag + " '" + value + "': expected a whole number of " +
                           range + "\n");
    process_options opts;
    opts.env[variable] = value;
    auto by_variable = f.run({"--model", model, "go"}, opts);
    CHECK(by_variable.exit_code == 2);
    CHECK(by_variable.err.find("invalid " + variable + " '" + value + "'") != std::string::npos);
    CHECK(f.transcripts().empty());
  }
}
