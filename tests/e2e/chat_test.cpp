// troupe chat with its input piped (the terminal itself is driven under tmux by
// chat_terminal_test.py): one message per line, slash commands, the end of input, and a chat
// against the fake model server that the namer names.

#include <doctest/doctest.h>

#include "support/cli_fixture.hpp"
#include "support/fake_server.hpp"

using namespace troupe;
using namespace troupe::test;
using nlohmann::json;

namespace {

process_result chat(cli_fixture& f, const std::vector<std::string>& args, const std::string& input,
                    process_options opts = {}) {
  std::vector<std::string> argv{"chat", "--cwd", (f.dir / "work").string(),
                                "--permission-mode", "accept-edits", "--allow", "shell"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto all = f.options();
  for (auto& [name, value] : opts.env) // the test's variables win over the fixture's
    all.env[name] = value;
  all.stdin_text = input;
  all.cwd = opts.cwd;
  all.timeout = std::chrono::seconds{30};
  return run_troupe(argv, all);
}

std::vector<json> only_transcript(cli_fixture& f) {
  auto transcripts = f.transcripts();
  REQUIRE(transcripts.size() == 1);
  return read_jsonl(transcripts[0]);
}

} // namespace

TEST_CASE("a piped chat sends one message per line and ends at the end of its input") {
  cli_fixture f;
  auto model = f.script({{{"text", "hello there"}}, {{"text", "```shell\necho ran\n```"}},
                         {{"text", "the shell said ran"}}});
  auto r = chat(f, {"--model", model}, "hi\n\nrun it\n");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("› hi\n") != std::string::npos);
  CHECK(r.out.find("hello there") != std::string::npos);
  CHECK(r.out.find("← shell (exit 0)") != std::string::npos);
  CHECK(r.out.find("the shell said ran") != std::string::npos);
  CHECK(r.out.find("● completed · 2 turn(s)") != std::string::npos);
  CHECK(r.out.find("\033[") == std::string::npos); // not a terminal: no colours
  auto log = only_transcript(f);
  REQUIRE(log.size() == 6); // hi, reply, run it, the shell call, its result, the answer
  CHECK(log[0]["content"] == "hi");
  CHECK(log[2]["content"] == "run it");
}

TEST_CASE("a chat's first prompt and slash commands, /exit included") {
  cli_fixture f;
  auto model = f.script({{{"text", "first"}}, {{"text", "second"}}});
  auto r = chat(f, {"--model", model, "start here"},
                "/help\n/tokens\n/rename demo chat\n/nosuch\nnext\n/exit\nnever sent\n");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("› start here") != std::string::npos);
  CHECK(r.out.find("/undo") != std::string::npos);           // the /help list
  CHECK(r.out.find("-token window") != std::string::npos);   // /tokens
  CHECK(r.out.find("unknown command /nosuch") != std::string::npos);
  auto log = only_transcript(f);
  REQUIRE(log.size() == 4);
  CHECK(log[2]["content"] == "next");
  auto listed = run_troupe({"ls", "--json"}, f.options());
  CHECK(json::parse(split_lines(listed.out).at(0))["name"] == "demo chat");
}

TEST_CASE("a chat resumed by name goes on with the conversation") {
  cli_fixture f;
  REQUIRE(chat(f, {"--model", f.script({{{"text", "noted"}}})}, "/rename notes\nremember 7\n")
            .exit_code == 0);
  auto r = chat(f, {"--resume", "notes", "--model", f.script({{{"text", "it was 7"}}})},
                "what was it?\n");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("2 messages loaded") != std::string::npos);
  auto log = only_transcript(f);
  REQUIRE(log.size() == 4);
  CHECK(log[3]["content"] == "it was 7");
}

TEST_CASE("a chat with an API model is named by the model, on the side") {
  cli_fixture f;
  fake_server server{R"([{"text": "Sure, let us look at the parser."}])"};
  process_options opts;
  opts.env["OPENAI_API_KEY"] = "test-key";
  opts.env["OPENAI_BASE_URL"] = server.url() + "/v1";
  auto r = chat(f, {"--model", "openai/test-model"}, "the parser drops comments\n", opts);
  CHECK(r.exit_code == 0);
  auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  size_t naming = 0;
  for (auto& q : requests)
    naming += q["naming"].get<bool>() ? 1 : 0;
  CHECK(naming == 1);
  auto info = json::parse(read_file(f.transcripts().at(0).parent_path() / "session.json"));
  CHECK(info["name"] == "Fake Session Title");
  CHECK(info["name_source"] == "model");
}

TEST_CASE("/undo against a real wire format: the next request leaves the turn out") {
  cli_fixture f;
  fake_server server{R"([{"text": "one"}, {"text": "two"}, {"text": "three"}])"};
  process_options opts;
  opts.env["OPENAI_API_KEY"] = "test-key";
  opts.env["OPENAI_BASE_URL"] = server.url() + "/v1";
  auto r = chat(f, {"--model", "openai/test-model"}, "alpha\nbeta\n/undo\ngamma\n", opts);
  CHECK(r.exit_code == 0);
  std::vector<json> steps;
  for (auto& q : server.requests())
    if (!q["naming"].get<bool>())
      steps.push_back(q["body"]["messages"]);
  REQUIRE(steps.size() == 3);
  auto sent = steps[2].dump();
  CHECK(sent.find("alpha") != std::string::npos);
  CHECK(sent.find("beta") == std::string::npos);
  CHECK(sent.find("\"two\"") == std::string::npos);
  CHECK(sent.find("gamma") != std::string::npos);
}

TEST_CASE("a model error in a chat is shown and the chat goes on") {
  cli_fixture f;
  auto model = f.script({{{"error", {{"status", 429}, {"message", "rate limited"}}}},
                         {{"text", "back again"}}});
  auto r = chat(f, {"--model", model, "--max-retries", "0"}, "first\nsecond\n");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("The turn stopped: rate limited") != std::string::npos);
  auto log = only_transcript(f);
  REQUIRE(log.size() == 4);
  CHECK(log[1]["origin"] == "error");
  CHECK(log[3]["content"] == "back again");
}

TEST_CASE("piped input with CRLF line ends works like LF") {
  cli_fixture f;
  auto r = chat(f, {"--model", f.script({{{"text", "hi"}}})}, "/help\r\nhello\r\n");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("unknown command") == std::string::npos);
  CHECK(r.out.find("/rename NAME") != std::string::npos);
  CHECK(only_transcript(f)[0]["content"] == "hello");
}

TEST_CASE("a chat's first prompt is sent once the session waits, a slash command included") {
  cli_fixture f;
  auto r = chat(f, {"--model", f.script({{{"text", "unused"}}}), "/tokens"}, "");
  CHECK(r.exit_code == 0);
  auto echoed = r.out.find("› /tokens");
  auto answered = r.out.find("-token window");
  REQUIRE(echoed != std::string::npos);
  REQUIRE(answered != std::string::npos);
  CHECK(echoed < answered);
}

TEST_CASE("a chat's idle timeout waits for background subagents") {
  cli_fixture f;
  write_script(f.dir / "work/child.jsonl", {{{"text", "child done"}, {"delay_ms", 2500}}});
  auto model = f.script(
    {{{"tool_calls", json::array({{{"name", "task"},
                                   {"input", {{"prompt", "work"}, {"mode", "background"},
                                              {"model", "scripted:child.jsonl"}}}}})}},
     {{"text", "launched"}},
     {{"text", "the child reported"}}});
  // Input that stays open (no end of input): the chat has to end by its idle timeout, which
  // must not count the time the background subagent works.
  std::vector<std::string> shell{"/bin/sh", "-c", "sleep 6 | \"$0\" \"$@\"", TROUPE_BINARY,
                                 "chat", "--cwd", (f.dir / "work").string(), "--model", model,
                                 "--idle-timeout", "1", "go"};
  auto opts = f.options();
  opts.timeout = std::chrono::seconds{30};
  auto chatted = run_process(shell, opts);
  CHECK(chatted.exit_code == 0);
  CHECK(chatted.out.find("the child reported") != std::string::npos);
}

TEST_CASE("/agents in a resumed chat lists the subagents of earlier runs") {
  cli_fixture f;
  write_script(f.dir / "work/child.jsonl", {{{"text", "child answer"}}});
  auto launch = json{{"prompt", "survey the tree"}, {"description", "survey"},
                     {"model", "scripted:child.jsonl"}};
  auto model = f.script({{{"text", ""},
                          {"tool_calls", json::array({{{"name", "task"}, {"input", launch}}})}},
                         {{"text", "surveyed"}}});
  REQUIRE(chat(f, {"--model", model, "--session-id", "ag"}, "go\n").exit_code == 0);
  auto r = chat(f, {"--resume", "ag", "--model", f.script({{{"text", "unused"}}})}, "/agents\n");
  CHECK(r.exit_code == 0);
  auto agent = std::filesystem::directory_iterator(session_dir(f, "ag") / "agents")->path();
  auto id = agent.filename().string();
  CHECK(r.out.find(id + "  completed  survey") != std::string::npos);
  CHECK(r.out.find("no subagents") == std::string::npos);
  auto info = read_json(agent / "session.json");
  CHECK(info["name"] == "survey");
  CHECK(info["first_prompt"] == "survey the tree");
}

TEST_CASE("a chat left before a word was said leaves no session behind") {
  cli_fixture f;
  auto r = chat(f, {"--model", f.script({{{"text", "unused"}}})}, "/help\n/tokens\n");
  CHECK(r.exit_code == 0);
  CHECK(f.transcripts().empty());
  auto listed = run_troupe({"ls"}, f.options());
  CHECK(listed.out.find("no sessions yet") != std::string::npos);
  // A word said, or a name given, and the session stays.
  REQUIRE(chat(f, {"--model", f.script({{{"text", "hi"}}})}, "hello\n").exit_code == 0);
  REQUIRE(chat(f, {"--model", f.script({{{"text", "x"}}})}, "/rename kept\n").exit_code == 0);
  CHECK(f.transcripts().size() == 2);
}

TEST_CASE("/model with a relative script records it absolute, as --model does") {
  cli_fixture f;
  write_script(f.dir / "other.jsonl", {{{"text", "from the other script"}}});
  process_options in_dir;
  in_dir.cwd = f.dir.path();
  auto r = chat(f, {"--model", f.script({{{"text", "unused"}}}), "--session-id", "switch"},
                "/model scripted:other.jsonl\nhello\n", in_dir);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("from the other script") != std::string::npos);
  CHECK(read_json(session_dir(f, "switch") / "session.json")["model"] ==
        "scripted:" + (f.dir / "other.jsonl").string());
}

TEST_CASE("a chat starts no bash before its first prompt") {
  cli_fixture f;
  auto started = f.dir / "shell-started";
  process_options opts;
  note_shell_starts(f, started, opts);
  auto r = chat(f, {"--model", f.script({{{"text", "never asked"}}})}, "/exit\n", opts);
  CHECK(r.exit_code == 0);
  CHECK_FALSE(std::filesystem::exists(started));
}
