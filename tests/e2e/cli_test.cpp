// The troupe binary, run as a user would: exit codes, stream-json, bad input, the demo.

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "support/cli_fixture.hpp"

using namespace troupe::test;
using nlohmann::json;

namespace {

std::vector<json> json_lines(const std::string& out) {
  std::vector<json> lines;
  for (auto& line : split_lines(out)) {
    auto parsed = json::parse(line, nullptr, false);
    REQUIRE_MESSAGE(!parsed.is_discarded(), "not JSON on stdout: " << line);
    lines.push_back(parsed);
  }
  return lines;
}

json shell_reply(const std::string& command) {
  return {{"text", "```shell\n" + command + "\n```"}};
}

} // namespace

TEST_CASE("a successful run exits 0 with init first and a success result last") {
  cli_fixture f;
  auto model = f.script({shell_reply("echo hello > out.txt"), {{"text", "wrote it"}}});
  auto r = f.run({"--model", model, "--output-format", "stream-json", "--log-level", "debug",
                  "write", "a", "file"});
  CHECK(r.exit_code == 0);
  auto lines = json_lines(r.out); // logs never reach stdout: every line is JSON
  REQUIRE(lines.size() == 6);
  CHECK(lines[0]["type"] == "system");
  CHECK(lines[0]["subtype"] == "init");
  CHECK(lines[1]["type"] == "user");
  CHECK(lines[1]["message"]["content"] == "write a file");
  CHECK(lines[2]["type"] == "assistant");
  CHECK(lines[3]["type"] == "user");
  CHECK(lines[3]["message"]["content"][0]["type"] == "tool_result");
  CHECK(lines[4]["type"] == "assistant");
  auto result = lines[5];
  CHECK(result["type"] == "result");
  CHECK(result["subtype"] == "success");
  CHECK(result["terminal_reason"] == "completed");
  CHECK(result["num_turns"] == 1);
  CHECK(result["result"] == "wrote it");
  CHECK(result["session_id"] == lines[0]["session_id"]);
  CHECK(result["duration_ms"].is_number());
  CHECK(read_file(f.dir / "work/out.txt") == "hello\n");
  REQUIRE(f.transcripts().size() == 1);
  CHECK(read_jsonl(f.transcripts()[0]).size() == 4);
}

TEST_CASE("the step cap ends the run with exit 3 and error_max_turns") {
  cli_fixture f;
  auto model = f.script({shell_reply("true"), shell_reply("true"), shell_reply("true")});
  auto r = f.run({"--model", model, "--max-steps", "2", "--output-format", "stream-json", "go"});
  CHECK(r.exit_code == 3);
  auto result = json_lines(r.out).back();
  CHECK(result["subtype"] == "error_max_turns");
  CHECK(result["terminal_reason"] == "max_turns");
}

TEST_CASE("TROUPE_MAX_STEPS sets the cap when --max-steps is absent") {
  cli_fixture f;
  auto model = f.script({shell_reply("true"), shell_reply("true")});
  process_options opts;
  opts.env["TROUPE_MAX_STEPS"] = "1";
  auto r = f.run({"--model", model, "go"}, opts);
  CHECK(r.exit_code == 3);
  CHECK(r.out.find("maximum of 1 steps") != std::string::npos);
}

TEST_CASE("--max-tool-output cuts long results and keeps them whole in the session") {
  cli_fixture f;
  auto model = f.script({shell_reply("seq 1 2000"), {{"text", "seen"}}});
  auto r = f.run({"--model", model, "--max-tool-output", "1000", "--session-id", "cut", "go"});
  REQUIRE(r.exit_code == 0);
  auto session = f.dir / "home/sessions/cut";
  auto log = read_jsonl(session / "transcript.jsonl");
  REQUIRE(log.size() == 4);
  auto content = log[2]["content"].get<std::string>();
  CHECK(content.size() < 1300);
  CHECK(log[2]["truncated"] == true);
  auto files = std::vector<std::filesystem::path>{};
  for (auto& entry : std::filesystem::directory_iterator(session / "tool-results"))
    files.push_back(entry.path());
  REQUIRE(files.size() == 1);
  CHECK(content.find("the whole output is in " + files[0].string()) != std::string::npos);
  CHECK(read_file(files[0]).find("\n1000\n1001\n") != std::string::npos);

  process_options env;
  env.env["TROUPE_MAX_TOOL_OUTPUT"] = "12";
  auto bad = f.run({"--model", model, "go"}, env);
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("TROUPE_MAX_TOOL_OUTPUT") != std::string::npos);
}

TEST_CASE("by default a result is cut at 30,000 bytes, head and tail, and kept whole") {
  cli_fixture f;
  // Neither --max-tool-output nor TROUPE_MAX_TOOL_OUTPUT (run_troupe drops an inherited one):
  // exactly 30,000 bytes pass whole, 40,000 lose their middle 10,000.
  auto bytes = [](int n) {
    return "printf HEAD; head -c " + std::to_string(n - 8) + " /dev/zero | tr '\\0' x; printf TAIL";
  };
  auto model = f.script({shell_reply(bytes(30000)), shell_reply(bytes(40000)), {{"text", "seen"}}});
  auto r = f.run({"--model", model, "--session-id", "default-cap", "go"});
  REQUIRE(r.exit_code == 0);
  auto session = f.dir / "home/sessions/default-cap";
  auto log = read_jsonl(session / "transcript.jsonl");
  REQUIRE(log.size() == 6);
  auto whole = log[2]["content"].get<std::string>();
  CHECK(whole.find("HEAD" + std::string(29992, 'x') + "TAIL") != std::string::npos);
  CHECK(log[2]["truncated"] == false);

  auto cut = log[4]["content"].get<std::string>();
  CHECK(log[4]["truncated"] == true);
  auto note = cut.find("\n[... 10000 bytes cut from the middle of 40000; the whole output is in ");
  REQUIRE(note != std::string::npos);
  CHECK(cut.substr(0, note).find("HEAD" + std::string(14996, 'x')) != std::string::npos);
  CHECK(cut.find(std::string(14996, 'x') + "TAIL") != std::string::npos);
  CHECK(cut.size() < 30000 + 300);
  std::vector<std::filesystem::path> files;
  for (auto& entry : std::filesystem::directory_iterator(session / "tool-results"))
    files.push_back(entry.path());
  REQUIRE(files.size() == 1);
  CHECK(cut.find(files[0].string()) != std::string::npos);
  CHECK(read_file(files[0]).find("HEAD" + std::string(39992, 'x') + "TAIL") != std::string::npos);
}

TEST_CASE("a script error ends the run with exit 1 and error_during_execution") {
  cli_fixture f;
  auto model = f.script({shell_reply("true")});
  auto r = f.run({"--model", model, "--output-format", "stream-json", "go"});
  CHECK(r.exit_code == 1);
  auto result = json_lines(r.out).back();
  CHECK(result["subtype"] == "error_during_execution");
  CHECK(result["terminal_reason"] == "error");
  CHECK(result["error"].get<std::string>().find("no reply left") != std::string::npos);
  // The reply and its tool result were logged before the failure.
  REQUIRE(f.transcripts().size() == 1);
  CHECK(read_jsonl(f.transcripts()[0]).size() == 3);
}

TEST_CASE("the prompt can come from stdin") {
  cli_fixture f;
  auto model = f.script({{{"text", "ok"}}});
  process_options opts;
  opts.stdin_text = "from stdin\n";
  auto r = f.run({"--model", model, "--output-format", "stream-json"}, opts);
  CHECK(r.exit_code == 0);
  CHECK(json_lines(r.out)[1]["message"]["content"] == "from stdin");
}

TEST_CASE("SIGINT interrupts the run: exit 130, result interrupted") {
  cli_fixture f;
  auto model = f.script({{{"text", "thinking"}, {"delay_ms", 30000}}});
  process_options opts;
  opts.interrupt_after = std::chrono::milliseconds{500};
  opts.timeout = std::chrono::seconds{10};
  auto r = f.run({"--model", model, "--output-format", "stream-json", "go"}, opts);
  CHECK(r.exit_code == 130);
  auto result = json_lines(r.out).back();
  CHECK(result["terminal_reason"] == "interrupted");
}

TEST_CASE("a reader that goes away interrupts the run instead of killing troupe") {
  cli_fixture f;
  auto model = f.script({{{"text", "slow"}, {"delay_ms", 30000}}});
  process_options opts;
  opts.close_stdout = true;
  opts.timeout = std::chrono::seconds{10};
  auto r = f.run({"--model", model, "--output-format", "stream-json", "go"}, opts);
  CHECK(r.exit_code == 130);
  auto log = read_jsonl(f.transcripts().at(0));
  CHECK(log.back()["origin"] == "interrupt");
}

TEST_CASE("bad input gets a one-line error and exit 2") {
  cli_fixture f;
  auto good = f.script({{{"text", "ok"}}});
  auto bad_json = f.dir / "bad.jsonl";
  write_file(bad_json, "{\"text\": \"fine\"}\n{not json}\n");
  struct row {
    std::vector<std::string> args;
    std::string says;
  };
  std::vector<row> rows = {
    {{"--model", good, "--frobnicate", "x"}, "--frobnicate"},
    {{"--model", good}, "no prompt"},
    {{"--model", "scripted:/no/such/file.jsonl", "x"}, "cannot read script /no/such/file.jsonl"},
    {{"--model", "scripted:" + bad_json.string(), "x"}, "line 2: not valid JSON"},
    {{"--model", good, "--cwd", "/no/such/dir", "x"}, "--cwd /no/such/dir: no such directory"},
    {{"--model", good, "--max-steps", "abc", "x"}, "invalid --max-steps 'abc'"},
    {{"--model", good, "--max-steps", "0", "x"}, "invalid --max-steps '0'"},
    {{"--model", good, "--output-format", "xml", "x"}, "--output-format"},
    {{"--model", good, "--session-id", "../escape", "x"}, "invalid --session-id"},
    {{"--model", "llama3", "x"}, "unknown model 'llama3'"},
    {{"--model", "gpt-9", "x"}, "openai/gpt-9 needs an API key"},
    {{"x"}, "no model configured"},
    {{"--model", good, "--log-level", "loud", "x"}, "invalid log level 'loud'"},
    // spdlog creates missing directories, so the log goes "under" a regular file.
    {{"--model", good, "--log-file", (bad_json / "troupe.log").string(), "x"},
     "cannot open log file"},
  };
  for (auto& row : rows) {
    CAPTURE(row.says);
    std::vector<std::string> argv{"run"};
    argv.insert(argv.end(), row.args.begin(), row.args.end());
    process_options opts;
    opts.stdin_text = "";
    auto r = run_troupe(argv, f.options(opts));
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(split_lines(r.err).size() == 1);
    CHECK(r.err.rfind("troupe: ", 0) == 0);
    CHECK(r.err.find(row.says) != std::string::npos);
  }
  process_options opts;
  opts.env["TROUPE_MAX_STEPS"] = "many";
  auto env_bad = f.run({"--model", good, "x"}, opts);
  CHECK(env_bad.exit_code == 2);
  CHECK(env_bad.err.find("invalid TROUPE_MAX_STEPS 'many'") != std::string::npos);
  for (const char* bad : {"0", "11", "2x"}) {
    process_options concurrency;
    concurrency.env["TROUPE_MAX_TOOL_CONCURRENCY"] = bad;
    auto r = f.run({"--model", good, "x"}, concurrency);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("invalid TROUPE_MAX_TOOL_CONCURRENCY") != std::string::npos);
  }
  CHECK(f.transcripts().empty());
}

TEST_CASE("a session with a torn transcript line continues without losing earlier lines") {
  cli_fixture f;
  auto first = f.run({"--model", f.script({{{"text", "one"}}}), "--session-id", "keep", "hi"});
  REQUIRE(first.exit_code == 0);
  auto path = f.dir / "home/sessions/keep/transcript.jsonl";
  auto before = read_file(path);
  write_file(path, before + "{\"role\":\"assistant\",\"cont");
  auto second =
    f.run({"--model", f.script({{{"text", "two"}}}), "--session-id", "keep", "again"});
  CHECK(second.exit_code == 0);
  CHECK(second.err.find("torn last line 3") != std::string::npos);
  auto after = read_file(path);
  CHECK(after.rfind(before, 0) == 0);
  auto log = read_jsonl(path);
  REQUIRE(log.size() == 4);
  CHECK(log[3]["content"] == "two");
}

TEST_CASE("a corrupt transcript line stops the run before anything is written") {
  cli_fixture f;
  auto path = f.dir / "home/sessions/bad/transcript.jsonl";
  write_file(path, "garbage\n{\"role\":\"user\",\"content\":\"x\"}\n");
  auto r = f.run({"--model", f.script({{{"text", "x"}}}), "--session-id", "bad", "hi"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("line 1 is not a valid message") != std::string::npos);
  CHECK(read_file(path) == "garbage\n{\"role\":\"user\",\"content\":\"x\"}\n");
}

TEST_CASE("troupe demo runs the bundled agent team offline") {
  temp_dir tmp;
  process_options opts;
  opts.env["TMPDIR"] = tmp.path().string();
  auto r = run_troupe({"demo", "--keep"}, opts);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("8 b.txt\n") != std::string::npos);
  CHECK(r.out.find("● completed") != std::string::npos);
  CHECK(r.out.find("delivered to the running session") != std::string::npos);
  // Kept: the last line says where, and the transcript is there to read.
  auto kept = r.out.rfind("troupe demo: kept " + tmp.path().string() + "/troupe-demo-");
  REQUIRE(kept != std::string::npos);
  auto transcript_line = r.out.substr(r.out.rfind("(transcript: ") + 13);
  transcript_line.pop_back();
  transcript_line.pop_back(); // ")\n"
  // Three notifications (two background subagents, one external notify), each in a turn or a
  // step of its own; the foreground subagent's answer is a tool result.
  size_t notifications = 0;
  size_t task_results = 0;
  for (auto& m : read_jsonl(transcript_line)) {
    notifications += m.value("origin", "") == "task-notification" ? 1 : 0;
    task_results += m.value("tool_name", "") == "task" ? 1 : 0;
  }
  CHECK(notifications == 3);
  CHECK(task_results == 3);
  auto agents = std::filesystem::path{transcript_line}.parent_path() / "agents";
  CHECK(std::distance(std::filesystem::directory_iterator(agents),
                      std::filesystem::directory_iterator()) == 3);
}

namespace {

// The demo directories left under `tmp`.
std::vector<std::string> demo_directories(const std::filesystem::path& tmp) {
  std::vector<std::string> out;
  for (auto& entry : std::filesystem::directory_iterator(tmp))
    if (entry.path().filename().string().rfind("troupe-demo-", 0) == 0)
      out.push_back(entry.path().string());
  return out;
}

} // namespace

TEST_CASE("troupe demo removes its temporary directory, an interrupted demo's too") {
  temp_dir tmp;
  process_options opts;
  opts.env["TMPDIR"] = tmp.path().string();
  auto r = run_troupe({"demo"}, opts);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("● completed") != std::string::npos);
  CHECK(r.out.find("troupe demo: removed " + tmp.path().string() + "/troupe-demo-") !=
        std::string::npos);
  CHECK(demo_directories(tmp.path()).empty());

  // Ctrl+C while the team works: the run ends interrupted, and the directory goes all the same.
  opts.interrupt_on_output = "● session";
  opts.timeout = std::chrono::seconds{20};
  auto interrupted = run_troupe({"demo"}, opts);
  CHECK(interrupted.exit_code == 130);
  CHECK(demo_directories(tmp.path()).empty());

  // stream-json: stdout stays JSON; a kept directory is named on stderr.
  process_options quiet;
  quiet.env["TMPDIR"] = tmp.path().string();
  auto json_run = run_troupe({"demo", "--output-format", "stream-json", "--keep"}, quiet);
  CHECK(json_run.exit_code == 0);
  CHECK(json_lines(json_run.out).back()["type"] == "result");
  REQUIRE(demo_directories(tmp.path()).size() == 1);
  CHECK(json_run.err.find("troupe demo: kept " + demo_directories(tmp.path())[0]) !=
        std::string::npos);
}

TEST_CASE("the example script runs through troupe run as well") {
  cli_fixture f;
  auto r = f.run({"--model", std::string{"scripted:"} + TROUPE_SOURCE_DIR +
                               "/examples/demo/script.jsonl",
                  "--output-format", "stream-json", "count words"});
  CHECK(r.exit_code == 0);
  auto result = json_lines(r.out).back();
  CHECK(result["num_steps"] == 6);
  CHECK(read_file(f.dir / "work/notes/b.txt") == "jumps over the lazy dog and runs away\n");
}

TEST_CASE("--help and --version exit 0") {
  CHECK(run_troupe({"--help"}).exit_code == 0);
  auto v = run_troupe({"--version"});
  CHECK(v.exit_code == 0);
  CHECK(v.out.find("troupe") != std::string::npos);
  auto none = run_troupe({});
  CHECK(none.exit_code == 2);
}

TEST_CASE("headless default mode: a refused shell call ends the run permission_blocked, exit 4") {
  cli_fixture f;
  auto model = f.script({{{"text", "```shell\ntouch made.txt\n```"}}, {{"text", "blocked"}}});
  auto r = f.run_unpermitted({"--model", model, "--output-format", "stream-json", "go"});
  CHECK(r.exit_code == 4);
  CHECK_FALSE(std::filesystem::exists(f.dir / "work/made.txt"));
  auto result = json_lines(r.out).back();
  CHECK(result["terminal_reason"] == "permission_blocked");
  REQUIRE(result["permission_denials"].size() == 1);
  CHECK(result["permission_denials"][0]["tool_name"] == "shell");
  CHECK(result["permission_denials"][0]["tool_input"]["command"] == "touch made.txt\n");
}

TEST_CASE("a headless refusal suggests --allow rules that, given, let the call run") {
  cli_fixture f;
  std::string line = "ls -a | wc -l > count.txt && git status --short";
  auto model = f.script({shell_reply(line), {{"text", "blocked"}}});
  auto r = f.run_unpermitted({"--model", model, "--output-format", "stream-json", "go"});
  CHECK(r.exit_code == 4);
  auto result = json_lines(r.out).back();
  REQUIRE(result["permission_denials"].size() == 1);
  auto reason = result["permission_denials"][0]["reason"].get<std::string>();
  CHECK(reason.find("\n") == std::string::npos);
  // Every `--allow '…'` the message names, in order.
  std::vector<std::string> args{"--model", f.script({shell_reply(line), {{"text", "done"}}})};
  for (size_t at = reason.find("--allow '"); at != std::string::npos;
       at = reason.find("--allow '", at + 1)) {
    auto start = at + 9;
    args.push_back("--allow");
    args.push_back(reason.substr(start, reason.find('\'', start) - start));
  }
  CHECK(std::vector<std::string>(args.begin() + 2, args.end()) ==
        std::vector<std::string>{"--allow", "shell(ls *)", "--allow", "shell(wc *)", "--allow",
                                 "shell(git status *)", "--allow", "write(count.txt)"});
  args.push_back("go");
  auto again = f.run_unpermitted(args);
  CHECK(again.exit_code == 0);
  CHECK(std::filesystem::exists(f.dir / "work/count.txt"));
}

TEST_CASE("plan mode: a refused write then a plan ends completed, and read-only commands run") {
  cli_fixture f;
  auto model = f.script({{{"text", "```write notes.txt\nx\n```"}},
                         {{"text", "The plan: 1. write notes.txt"}}});
  auto r = f.run_unpermitted({"--model", model, "--permission-mode", "plan", "--output-format",
                              "stream-json", "go"});
  CHECK(r.exit_code == 0);
  auto lines = json_lines(r.out);
  auto result = lines.back();
  CHECK(result["terminal_reason"] == "completed");
  REQUIRE(result["permission_denials"].size() == 1);
  CHECK(result["permission_denials"][0]["cause"] == "plan_mode");
  CHECK_FALSE(std::filesystem::exists(f.dir / "work/notes.txt"));
  CHECK(r.out.find("Permission denied") != std::string::npos); // the write's result

  auto reading = f.script({shell_reply("ls | wc -l && git status --short"), {{"text", "seen"}}});
  auto read = f.run_unpermitted({"--model", reading, "--permission-mode", "plan",
                                 "--output-format", "stream-json", "go"});
  CHECK(read.exit_code == 0);
  CHECK(json_lines(read.out).back()["permission_denials"].empty());

  // A rule's refusal is not a plan: the model stopping after it is blocked.
  auto denied = f.script({shell_reply("ls"), {{"text", "I cannot go on"}}});
  auto blocked = f.run_unpermitted({"--model", denied, "--permission-mode", "plan", "--deny",
                                    "shell(ls *)", "--output-format", "stream-json", "go"});
  CHECK(blocked.exit_code == 4);
  CHECK(json_lines(blocked.out).back()["terminal_reason"] == "permission_blocked");
}

TEST_CASE("settings files and flags: rules from the user, the project and --settings") {
  cli_fixture f;
  auto model = f.script({{{"text", "```shell\ntouch made.txt\n```"}}, {{"text", "done"}}});
  write_file(f.dir / "work/.troupe/settings.json",
             R"json({"permissions": {"allow": ["shell(touch *)"]}})json");
  CHECK(f.run_unpermitted({"--model", model, "go"}).exit_code == 0);
  CHECK(std::filesystem::exists(f.dir / "work/made.txt"));

  // The user's deny holds over the project's allow.
  write_file(f.dir / "config/troupe/settings.json",
             R"json({"permissions": {"deny": ["shell(touch *)"]}})json");
  std::filesystem::remove(f.dir / "work/made.txt");
  CHECK(f.run_unpermitted({"--model", model, "go"}).exit_code == 4);
  CHECK_FALSE(std::filesystem::exists(f.dir / "work/made.txt"));

  // A bare deny removes the tool from what the model is offered.
  auto init = json_lines(f.run_unpermitted({"--model", model, "--deny", "shell", "--output-format",
                                            "stream-json", "go"})
                           .out)
                .front();
  CHECK(std::find(init["tools"].begin(), init["tools"].end(), "shell") == init["tools"].end());
  CHECK(std::find(init["tools"].begin(), init["tools"].end(), "read") != init["tools"].end());
}

TEST_CASE("bad permission settings are one-line errors, exit 2, before anything runs") {
  cli_fixture f;
  auto model = f.script({{{"text", "done"}}});
  write_file(f.dir / "broken.json", "{");
  struct row {
    std::vector<std::string> args;
    std::string says;
  };
  std::vector<row> rows = {
    {{"--permission-mode", "yolo"}, "invalid --permission-mode 'yolo'"},
    {{"--allow", "shell("}, "invalid permission rule 'shell('"},
    {{"--settings", (f.dir / "nope.json").string()}, "no such file"},
    {{"--settings", f.dir.path().string()}, "not a regular file"},
    {{"--settings", (f.dir / "broken.json").string()}, "broken.json is not a JSON object"},
  };
  for (auto& row : rows) {
    CAPTURE(row.says);
    auto args = row.args;
    args.insert(args.end(), {"--model", model, "go"});
    auto r = f.run_unpermitted(args);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(row.says) != std::string::npos);
    CHECK(split_lines(r.err).size() == 1);
  }
  CHECK(f.transcripts().empty());
}

TEST_CASE("bypass runs everything and says so on stderr") {
  cli_fixture f;
  auto model = f.script({{{"text", "```shell\ntouch made.txt\n```"}}, {{"text", "done"}}});
  auto r = f.run_unpermitted({"--model", model, "--permission-mode", "bypass", "go"});
  CHECK(r.exit_code == 0);
  CHECK(std::filesystem::exists(f.dir / "work/made.txt"));
  CHECK(r.err.find("WARNING: permission mode bypass") != std::string::npos);
}

TEST_CASE("log lines on stderr show what a model said in printable form") {
  cli_fixture f;
  auto model = f.script({{{"error", {{"status", 400}, {"message", "bad \033]0;PWNED\007 thing"}}}}});
  auto r = f.run({"--model", model, "--log-level", "info", "hi"});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find('\033') == std::string::npos);
  CHECK(r.err.find("bad ^[]0;PWNED^G thing") != std::string::npos);
}

namespace {

// A port on 127.0.0.1 that nothing listens on (bound, then closed again).
int closed_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  socklen_t size = sizeof address;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0);
  ::close(fd);
  return ntohs(address.sin_port);
}

size_t occurrences(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++n;
  return n;
}

} // namespace

TEST_CASE("a failed run's error is printed once, at the end of its output, not also on stderr") {
  cli_fixture f;
  auto model = f.script({shell_reply("true")});
  auto r = f.run({"--model", model, "go"});
  CHECK(r.exit_code == 1);
  CHECK(occurrences(r.out, "no reply left") == 1);
  CHECK(r.out.find("\nerror: the scripted model has no reply left") != std::string::npos);
  CHECK(r.err == "");
  // The log still has it, a level down.
  auto logged = f.run({"--model", f.script({shell_reply("true")}), "--log-level", "info", "go"});
  CHECK(logged.err.find("ended with an error: the scripted model has no reply left") !=
        std::string::npos);
  CHECK(occurrences(logged.out, "no reply left") == 1);

  // A provider nobody answers: the same.
  auto opts = f.options();
  opts.env["OPENAI_API_KEY"] = "test-key";
  opts.env["OPENAI_BASE_URL"] = "http://127.0.0.1:" + std::to_string(closed_port()) + "/v1";
  auto in_work = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"run", "--cwd", (f.dir / "work").string(), "--model",
                               "openai/gpt-4.1", "--max-retries", "0"});
    return run_troupe(args, opts);
  };
  auto http = in_work({"hi"});
  CHECK(http.exit_code == 1);
  CHECK(occurrences(http.out, "Couldn't connect") + occurrences(http.out, "onnection refused") ==
        1);
  CHECK(http.err == "");
  // stream-json: the error is the result line's, and stdout holds nothing but JSON lines.
  auto json_run = in_work({"--output-format", "stream-json", "hi"});
  CHECK(json_run.exit_code == 1);
  REQUIRE(!json_run.out.empty());
  CHECK(json_lines(json_run.out).back()["error"].get<std::string>().find("127.0.0.1") !=
        std::string::npos);
  CHECK(json_run.err == "");
}

TEST_CASE("a subagent's failure is its result in the parent's output, not a log line") {
  cli_fixture f;
  write_script(f.dir / "work/child.jsonl", {shell_reply("true")});
  auto launch = json{{"prompt", "do it"}, {"description", "failing child"},
                     {"model", "scripted:child.jsonl"}};
  auto parent = f.script({{{"text", ""}, {"tool_calls", json::array({{{"name", "task"},
                                                                      {"input", launch}}})}},
                          {{"text", "the child failed"}}});
  auto r = f.run({"--model", parent, "go"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("[the agent ended error: the scripted model has no reply left") !=
        std::string::npos);
  CHECK(occurrences(r.out, "no reply left") == 1);
  CHECK(r.err == "");
  auto json_run = f.run({"--model", parent, "--output-format", "stream-json", "go"});
  CHECK(json_run.exit_code == 0);
  CHECK(json_lines(json_run.out).back()["type"] == "result");
  CHECK(json_run.err == "");
}

TEST_CASE("a shell call that never ran (bad arguments) shows no exit code") {
  cli_fixture f;
  auto model = f.script({{{"text", ""}, {"tool_calls", {{{"name", "shell"}, {"input", {{"cmd", "ls"}}}}}}},
                         {{"text", "ok"}}});
  auto r = f.run({"--model", model, "go"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("← shell [error]\n  │ tool 'shell' needs the argument 'command'") !=
        std::string::npos);
  CHECK(r.out.find("exit -1") == std::string::npos);
}

TEST_CASE("a refused call is shown as refused, in the run's output and in troupe show") {
  cli_fixture f;
  auto model = f.script({shell_reply("touch made.txt"), {{"text", "blocked"}}});
  auto r = f.run_unpermitted({"--model", model, "--session-id", "refused", "go"});
  CHECK(r.exit_code == 4);
  CHECK(r.out.find("← shell refused\n  │ Permission denied: shell needs approval") !=
        std::string::npos);
  CHECK(r.out.find("exit -1") == std::string::npos);
  auto log = read_jsonl(session_dir(f, "refused") / "transcript.jsonl");
  REQUIRE(log.size() >= 3);
  CHECK(log[2]["refused"] == "permission");
  auto shown = run_troupe({"show", "refused"}, f.options());
  CHECK(shown.out.find("← shell refused\n") != std::string::npos);
  CHECK(shown.out.find("exit -1") == std::string::npos);

  // Plan mode's refusal, in stream-json: a field on the tool_result line.
  auto plan = f.run_unpermitted({"--model",
                                 f.script({{{"text", "```write notes.txt\nx\n```"}},
                                           {{"text", "The plan: 1. write notes.txt"}}}),
                                 "--permission-mode", "plan", "--output-format", "stream-json",
                                 "go"});
  CHECK(plan.exit_code == 0);
  auto lines = json_lines(plan.out);
  auto result = std::find_if(lines.begin(), lines.end(), [](const json& l) {
    return l.contains("exit_code");
  });
  REQUIRE(result != lines.end());
  CHECK((*result)["refused"] == "plan_mode");
  CHECK((*result)["message"]["content"][0]["is_error"] == true);

  // A command that ran and failed is no refusal.
  auto ran = f.run({"--model", f.script({shell_reply("exit 3"), {{"text", "it failed"}}}), "go"});
  CHECK(ran.out.find("← shell (exit 3) [error]") != std::string::npos);
  CHECK(ran.out.find("refused") == std::string::npos);
}
