// troupe spelled as Claude Code's command line: `troupe -p PROMPT`, a bare `troupe PROMPT`, and
// Claude Code's flags, run through the real binary as a script or the Agent SDK would.

#include <doctest/doctest.h>

#include <algorithm>

#include "support/cli_fixture.hpp"
#include "support/provider_run.hpp"

using namespace troupe::test;
using nlohmann::json;
using strings = std::vector<std::string>;

namespace {

json shell_reply(const std::string& command) {
  return {{"text", "```shell\n" + command + "\n```"}};
}

// troupe as Claude Code is run: no subcommand, the workspace and model given, nothing else;
// `env` is set over the fixture's environment.
process_result claude(cli_fixture& f, strings args, process_options opts = {},
                      const std::map<std::string, std::string>& env = {}) {
  // After a subcommand named first (`troupe run …`), else first.
  auto at = !args.empty() && (args[0] == "run" || args[0] == "chat") ? 1 : 0;
  args.insert(args.begin() + at, {"--cwd", (f.dir / "work").string()});
  auto options = f.options(std::move(opts));
  for (auto& [name, value] : env)
    options.env[name] = value;
  return run_troupe(args, options);
}

// The environment that points the Anthropic provider at `server`.
std::map<std::string, std::string> anthropic_at(const fake_server& server) {
  return {{"ANTHROPIC_API_KEY", "test-key"}, {"ANTHROPIC_BASE_URL", server.url()}};
}

json last_line(const process_result& r) {
  auto lines = split_lines(r.out);
  REQUIRE_MESSAGE(!lines.empty(), "no output; stderr: " << r.err);
  return json::parse(lines.back());
}

json init_of(const process_result& r) {
  auto lines = split_lines(r.out);
  REQUIRE_MESSAGE(!lines.empty(), "no output; stderr: " << r.err);
  return json::parse(lines.front());
}

// A usage error: exit 2, one line on stderr naming `says`, nothing on stdout.
void check_refused(const process_result& r, const std::string& says) {
  CAPTURE(says);
  CAPTURE(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(split_lines(r.err).size() == 1);
  CHECK(r.err.rfind("troupe: ", 0) == 0);
  CHECK(r.err.find(says) != std::string::npos);
}

strings tools_of(const json& init) { return init["tools"].get<strings>(); }

bool has(const strings& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

} // namespace

TEST_CASE("troupe -p, --print and a bare prompt are troupe run") {
  cli_fixture f;
  for (auto& form : {strings{"-p", "say hi"}, strings{"--print", "say hi"}, strings{"say", "hi"},
                     strings{"run", "-p", "say hi"}}) {
    CAPTURE(form.front());
    auto model = f.script({{{"text", "hello"}}});
    auto args = form;
    args.insert(args.end(), {"--model", model, "--output-format", "stream-json", "--max-turns",
                             "3"});
    auto r = claude(f, args);
    CHECK(r.exit_code == 0);
    auto lines = split_lines(r.out);
    REQUIRE(lines.size() == 4);
    CHECK(json::parse(lines[1])["message"]["content"] == "say hi");
    CHECK(last_line(r)["result"] == "hello");
  }
  // A first word that names a subcommand is the subcommand.
  auto ls = run_troupe({"ls"}, f.options());
  CHECK(ls.exit_code == 0);
  CHECK(ls.out.find("say hi") != std::string::npos);
}

TEST_CASE("the prompt comes from stdin with -p alone, and with no words at all") {
  cli_fixture f;
  process_options piped;
  piped.stdin_text = "from stdin\n";
  auto r = claude(f, {"-p", "--model", f.script({text_line("ok")}), "--output-format", "stream-json"},
                  piped);
  CHECK(r.exit_code == 0);
  CHECK(json::parse(split_lines(r.out)[1])["message"]["content"] == "from stdin");
  // No words: stdin is not a terminal here, so it is a run reading stdin.
  auto options = f.options(piped);
  options.env["TROUPE_MODEL"] = f.script({text_line("from env model")});
  options.cwd = f.dir / "work";
  auto bare = run_troupe({}, options);
  CHECK(bare.exit_code == 0);
  CHECK(bare.out.find("from env model") != std::string::npos);
  // -p with no prompt anywhere is bad input.
  auto none = claude(f, {"-p", "--model", f.script({text_line("x")})});
  check_refused(none, "no prompt");
  // A prompt that starts with '-' goes after `--`.
  auto weird = claude(f, {"--model", f.script({text_line("ok")}), "--output-format",
                          "stream-json", "--", "--weird prompt"});
  CHECK(weird.exit_code == 0);
  CHECK(json::parse(split_lines(weird.out)[1])["message"]["content"] == "--weird prompt");
}

TEST_CASE("troupe -p prints the answer alone, as claude -p does") {
  cli_fixture f;
  auto answer = claude(f, {"-p", "say hi", "--model", f.script({text_line("hi there")})});
  CHECK(answer.exit_code == 0);
  CHECK(answer.out == "hi there\n");
  // troupe run shows the session as it goes.
  auto shown = claude(f, {"run", "say hi", "--model", f.script({text_line("hi there")})});
  CHECK(shown.out.find("● completed") != std::string::npos);
  // An error goes to stderr; stdout holds no answer.
  auto failed = claude(f, {"-p", "say hi", "--model", f.script({shell_reply("true")}),
                           "--allowedTools", "Bash"}); // the script runs out at step 2
  CHECK(failed.exit_code == 1);
  CHECK(failed.out.find("●") == std::string::npos); // no session view, at most the last text
  CHECK(failed.err.find("troupe: error:") != std::string::npos);
}

TEST_CASE("--output-format json prints the stream-json result line and nothing else") {
  cli_fixture f;
  auto steps = std::vector<json>{shell_reply("echo hi"), text_line("all done")};
  auto streamed = claude(f, {"-p", "go", "--model", f.script(steps), "--allowedTools", "Bash",
                             "--output-format", "stream-json"});
  auto single = claude(f, {"-p", "go", "--model", f.script(steps), "--allowedTools", "Bash",
                           "--output-format", "json"});
  REQUIRE(single.exit_code == 0);
  REQUIRE(split_lines(single.out).size() == 1);
  auto object = json::parse(single.out);
  auto last = last_line(streamed);
  // What differs between two runs: ids, times, and the model (a script of its own each).
  for (auto* varies : {"session_id", "duration_ms", "uuid", "duration_api_ms", "modelUsage"}) {
    CHECK(object.contains(varies));
    object.erase(varies);
    last.erase(varies);
  }
  CHECK(object == last);
  CHECK(object["result"] == "all done");
  // An error result is the same single object.
  auto failed = claude(f, {"-p", "go", "--model", f.script({shell_reply("true")}),
                           "--allowedTools", "Bash", "--output-format", "json"});
  CHECK(failed.exit_code == 1);
  REQUIRE(split_lines(failed.out).size() == 1);
  CHECK(json::parse(failed.out)["subtype"] == "error_during_execution");
}

TEST_CASE("--max-turns is the step cap (error_max_turns), and bad values are refused") {
  cli_fixture f;
  auto model = f.script({shell_reply("true"), shell_reply("true"), shell_reply("true")});
  auto r = claude(f, {"-p", "go", "--model", model, "--allowedTools", "Bash", "--max-turns", "2",
                      "--output-format", "stream-json"});
  CHECK(r.exit_code == 1);
  CHECK(last_line(r)["subtype"] == "error_max_turns");
  auto equals = claude(f, {"-p", "go", "--model", model, "--allowedTools=Bash", "--max-turns=1",
                           "--output-format=json"});
  CHECK(equals.exit_code == 1);
  CHECK(json::parse(equals.out)["num_steps"] == 1);
  // Claude Code's spelling exits 1 on every error result; `troupe run` keeps its own codes.
  auto own = claude(f, {"run", "go", "--model", model, "--allow", "shell", "--max-steps", "1"});
  CHECK(own.exit_code == 3);
  for (auto& bad : {strings{"--max-turns", "abc"}, strings{"--max-turns", "0"},
                    strings{"--max-turns=-1"}, strings{"--max-turns", "2x"}}) {
    auto args = bad;
    args.insert(args.end(), {"-p", "go", "--model", model});
    check_refused(claude(f, args), "invalid --max-turns");
  }
  check_refused(claude(f, {"-p", "go", "--model", model, "--max-turns", "2", "--max-steps", "3"}),
                "--max-turns and --max-steps are the same cap");
  CHECK(f.transcripts().size() == 3); // two -p runs and one troupe run
}

TEST_CASE("--allowedTools and --disallowedTools: Claude Code's lists, in every spelling") {
  cli_fixture f;
  auto touch = [&] { return f.script({shell_reply("touch made.txt"), text_line("done")}); };
  auto made = f.dir / "work/made.txt";
  // Without a rule the headless run cannot ask: blocked.
  CHECK(claude(f, {"-p", "go", "--model", touch()}).exit_code == 1);
  CHECK_FALSE(std::filesystem::exists(made));
  for (auto& spelling : {strings{"--allowedTools", "Bash(touch *)", "Read"},
                         strings{"--allowed-tools", "Read", "Bash(touch *)"},
                         strings{"--allowedTools=Bash(touch *)"},
                         strings{"--allowedTools", "Read,Bash(touch *)"},
                         strings{"--allowedTools", "Read Bash(touch *)"},
                         strings{"--allowedTools", "Read", "--allowedTools", "Bash(touch made.txt)"}}) {
    CAPTURE(spelling.front());
    std::filesystem::remove(made);
    auto args = strings{"-p", "go", "--model", touch()};
    args.insert(args.end(), spelling.begin(), spelling.end());
    auto r = claude(f, args);
    CHECK(r.exit_code == 0);
    CHECK(std::filesystem::exists(made));
  }
  // A list takes the words up to the next flag: the prompt goes before it, or after `=`.
  std::filesystem::remove(made);
  auto after = claude(f, {"--model", touch(), "--allowedTools=Bash(touch *)", "go on",
                          "--output-format", "stream-json"});
  CHECK(after.exit_code == 0);
  CHECK(json::parse(split_lines(after.out)[1])["message"]["content"] == "go on");

  // A deny holds even in bypass mode; a bare one removes the tool.
  std::filesystem::remove(made);
  auto denied = claude(f, {"-p", "go", "--model", touch(), "--dangerously-skip-permissions",
                           "--sandbox", "off", "--disallowedTools", "Bash(touch *)", "Edit"});
  CHECK(denied.exit_code == 1);
  CHECK_FALSE(std::filesystem::exists(made));
  auto removed = claude(f, {"-p", "go", "--model", touch(), "--disallowed-tools", "Bash,Edit",
                            "--output-format", "stream-json"});
  auto tools = tools_of(init_of(removed));
  CHECK_FALSE(has(tools, "shell"));
  CHECK_FALSE(has(tools, "edit"));
  CHECK_FALSE(has(tools, "patch"));
  CHECK_FALSE(has(tools, "write")); // Claude Code's Edit is every tool that edits files
  CHECK(has(tools, "read"));
  check_refused(claude(f, {"-p", "go", "--model", touch(), "--allowedTools", "Bash(git"}),
                "invalid permission rule");
}

TEST_CASE("--tools chooses the built-in tools offered") {
  cli_fixture f;
  auto model = [&] { return f.script({text_line("ok")}); };
  auto some = claude(f, {"-p", "go", "--model", model(), "--tools", "Read,Grep", "Bash",
                         "--output-format", "stream-json"});
  CHECK(tools_of(init_of(some)) == strings{"shell", "read", "grep"});
  auto none = claude(f, {"-p", "go", "--model", model(), "--tools", "", "--output-format",
                         "stream-json"});
  CHECK(tools_of(init_of(none)).empty());
  auto sdk_none = claude(f, {"-p", "go", "--model", model(), "--tools=", "--output-format",
                             "stream-json"});
  CHECK(tools_of(init_of(sdk_none)).empty());
  // A model that calls a tool anyway is told there are none, not handed an empty list.
  auto bash_call = json::parse(
    R"js({"text": "", "tool_calls": [{"name": "Bash", "input": {"command": "ls"}}]})js");
  auto called = claude(f, {"-p", "go", "--model", f.script({bash_call, text_line("ok")}),
                           "--tools", "", "--output-format", "stream-json", "--verbose"});
  CHECK(called.exit_code == 0);
  CHECK(called.out.find("unknown tool 'Bash'; this session has no tools\"") !=
        std::string::npos);
  auto all = claude(f, {"-p", "go", "--model", model(), "--tools=default", "--output-format",
                        "stream-json"});
  CHECK(tools_of(init_of(all)).size() == 14);
  check_refused(claude(f, {"-p", "go", "--model", model(), "--tools", "Read,WebFetch"}),
                "unknown tool 'WebFetch' in --tools");
}

TEST_CASE("--system-prompt replaces troupe's instructions, --append-system-prompt adds to them") {
  const std::string answer = R"js([{"text": "Done."}])js";
  {
    fake_server server{answer};
    provider_run run{"anthropic"};
    auto r = run.run(server, {"--system-prompt", "You review code.", "go"});
    REQUIRE(r.exit_code == 0);
    CHECK(server.requests()[0]["body"]["system"] == "You review code.\n");
  }
  {
    // The text formats keep what the model needs to call tools.
    fake_server server{answer};
    provider_run run{"openai"};
    auto r = run.run(server, {"--tool-format", "markdown", "--system-prompt", "You review code.",
                              "--append-system-prompt", "Answer in French.", "go"});
    REQUIRE(r.exit_code == 0);
    auto system = server.requests()[0]["body"]["messages"][0]["content"].get<std::string>();
    CHECK(system.rfind("You review code.\n", 0) == 0);
    CHECK(system.find("You are troupe") == std::string::npos);
    CHECK(system.find("```shell") != std::string::npos);
    CHECK(system.size() > std::string{"Answer in French."}.size());
    CHECK(system.substr(system.size() - 17) == "Answer in French.");
  }
  {
    // Appended instructions are the main agent's: a subagent keeps troupe's own.
    fake_server server{R"js([
      {"text": "", "tool_calls": [{"name": "task", "input": {"prompt": "look around", "description": "look"}}]},
      {"text": "nothing here"},
      {"text": "Done."}])js"};
    provider_run run{"anthropic"};
    auto r = run.run(server, {"--append-system-prompt", "Answer in French.", "go"});
    REQUIRE(r.exit_code == 0);
    auto requests = server.requests();
    REQUIRE(requests.size() == 3);
    auto parent = requests[0]["body"]["system"].get<std::string>();
    auto child = requests[1]["body"]["system"].get<std::string>();
    CHECK(parent.find("You are troupe") == 0);
    CHECK(parent.find("Answer in French.") != std::string::npos);
    CHECK(child.find("You are troupe") == 0);
    CHECK(child.find("subagent") != std::string::npos);
    CHECK(child.find("Answer in French.") == std::string::npos);
  }
  cli_fixture f;
  write_file(f.dir / "prompt.txt", "From a file.");
  auto model = f.script({text_line("ok")});
  check_refused(claude(f, {"-p", "go", "--model", model, "--system-prompt", "x",
                           "--system-prompt-file", (f.dir / "prompt.txt").string()}),
                "cannot be combined");
  check_refused(claude(f, {"-p", "go", "--model", model, "--append-system-prompt-file",
                           (f.dir / "missing.txt").string()}),
                "--append-system-prompt-file");
  CHECK(claude(f, {"-p", "go", "--model", model, "--system-prompt-file",
                   (f.dir / "prompt.txt").string()})
          .exit_code == 0);
}

TEST_CASE("--model takes Claude Code's names and bare model names") {
  cli_fixture f;
  for (auto* alias : {"sonnet", "claude-sonnet-4-5"}) {
    fake_server server{R"js([{"text": "Done."}])js"};
    auto r = claude(f, {"-p", "go", "--model", alias, "--session-id", alias}, {},
                    anthropic_at(server));
    CHECK(r.exit_code == 0);
    CHECK(server.requests()[0]["body"]["model"] == "claude-sonnet-4-5");
    // Recorded with its provider: a resume finds the same one.
    CHECK(read_json(session_dir(f, alias) / "session.json")["model"] ==
          "anthropic/claude-sonnet-4-5");
  }
  check_refused(claude(f, {"-p", "go", "--model", "sonnet"}),
                "anthropic/claude-sonnet-4-5 needs an API key");
  check_refused(claude(f, {"-p", "go", "--model", "opus"}), "anthropic/claude-opus-4-5 needs");
  check_refused(claude(f, {"-p", "go", "--model", "claude-3-5-haiku-latest"}),
                "anthropic/claude-3-5-haiku-latest needs");
  check_refused(claude(f, {"-p", "go", "--model", "gpt-4.1"}), "openai/gpt-4.1 needs an API key");
  check_refused(claude(f, {"-p", "go", "--model", "o3"}), "openai/o3 needs an API key");
  check_refused(claude(f, {"-p", "go", "--model", "llama3"}), "unknown model 'llama3'");
}

TEST_CASE("--fallback-model takes over when the model stays overloaded") {
  cli_fixture f;
  auto overloaded = f.script({{{"error", {{"status", 529}, {"message", "Overloaded"}}}}});
  auto fallback = f.script({text_line("the fallback answered")});
  // Without a fallback the run fails.
  CHECK(claude(f, {"-p", "go", "--model", overloaded}).exit_code == 1);
  auto r = claude(f, {"-p", "go", "--model", overloaded, "--fallback-model", fallback,
                      "--output-format", "stream-json", "--session-id", "fell-back"});
  CHECK(r.exit_code == 0);
  CHECK(last_line(r)["result"] == "the fallback answered");
  CHECK(r.out.find("\"subtype\":\"model_fallback\"") != std::string::npos);
  auto info = read_json(session_dir(f, "fell-back") / "session.json");
  CHECK(info["model"] == fallback);
  // A request error is no overload: no fallback.
  auto refused = f.script({{{"error", {{"status", 400}, {"message", "bad request"}}}}});
  CHECK(claude(f, {"-p", "go", "--model", refused, "--fallback-model",
                   f.script({text_line("x")})})
          .exit_code == 1);
  check_refused(claude(f, {"-p", "go", "--model", fallback, "--fallback-model", fallback}),
                "is the run's own model");
  check_refused(claude(f, {"-p", "go", "--model", fallback, "--fallback-model", "llama3"}),
                "--fallback-model: unknown model 'llama3'");
  check_refused(claude(f, {"-p", "go", "--model", fallback, "--fallback-model", "sonnet"}),
                "--fallback-model: anthropic/claude-sonnet-4-5 needs an API key");
}

TEST_CASE("--permission-mode takes Claude Code's names") {
  cli_fixture f;
  auto write_it = [&] {
    return f.script({{{"text", "```write notes.txt\nx\n```"}}, text_line("done")});
  };
  auto notes = f.dir / "work/notes.txt";
  CHECK(claude(f, {"-p", "go", "--model", write_it(), "--permission-mode", "acceptEdits"})
          .exit_code == 0);
  CHECK(std::filesystem::exists(notes));
  std::filesystem::remove(notes);
  // dontAsk refuses what no rule allows, with the rule that would allow it.
  auto refused = claude(f, {"-p", "go", "--model", write_it(), "--permission-mode", "dontAsk",
                            "--output-format", "stream-json"});
  CHECK(refused.exit_code == 1);
  CHECK_FALSE(std::filesystem::exists(notes));
  auto reason = last_line(refused)["permission_denials"][0]["reason"].get<std::string>();
  CHECK(reason.find("dont-ask") != std::string::npos);
  CHECK(reason.find("--allow 'write(notes.txt)'") != std::string::npos);
  CHECK(claude(f, {"-p", "go", "--model", write_it(), "--permission-mode", "dontAsk",
                   "--allowedTools", "Edit"})
          .exit_code == 0);
  std::filesystem::remove(notes);
  auto bypass = claude(f, {"-p", "go", "--model", write_it(), "--permission-mode=bypassPermissions"});
  CHECK(bypass.exit_code == 0);
  CHECK(bypass.err.find("WARNING: permission mode bypass") != std::string::npos);
  std::filesystem::remove(notes);
  auto skip = claude(f, {"-p", "go", "--model", write_it(), "--dangerously-skip-permissions",
                         "--allow-dangerously-skip-permissions"});
  CHECK(skip.exit_code == 0);
  CHECK(skip.err.find("WARNING: permission mode bypass") != std::string::npos);
  CHECK(std::filesystem::exists(notes));
  check_refused(claude(f, {"-p", "go", "--model", write_it(), "--permission-mode", "bogus"}),
                "invalid --permission-mode 'bogus'");
  check_refused(claude(f, {"-p", "go", "--model", write_it(), "--permission-mode", "plan",
                           "--dangerously-skip-permissions"}),
                "--dangerously-skip-permissions is permission mode bypass");
}

TEST_CASE("--settings takes a JSON object, which is written nowhere") {
  cli_fixture f;
  auto touch = [&] { return f.script({shell_reply("ls; touch made.txt"), text_line("done")}); };
  const std::string settings = R"js({"permissions":{"allow":["Bash(ls *)","Bash(touch made.txt)"]}})js";
  auto r = claude(f, {"-p", "go", "--model", touch(), "--settings", settings, "--session-id", "js"});
  CHECK(r.exit_code == 0);
  CHECK(std::filesystem::exists(f.dir / "work/made.txt"));
  for (auto& entry : std::filesystem::recursive_directory_iterator(f.dir.path()))
    if (entry.is_regular_file())
      CHECK_MESSAGE(read_file(entry.path()).find("Bash(touch made.txt)") == std::string::npos,
                    entry.path());
  check_refused(claude(f, {"-p", "go", "--model", touch(), "--settings", "{bad json"}),
                "--settings JSON is not a JSON object");
  check_refused(claude(f, {"-p", "go", "--model", touch(), "--settings",
                           R"js({"permissions":{"allow":["Bash("]}})js"}),
                "invalid permission rule");
  check_refused(claude(f, {"-p", "go", "--model", touch(), "--settings", "  { \"sandbox\": 3 }"}),
                "--settings JSON: \"sandbox\" must be");
}

TEST_CASE("Claude Code's project settings are read, as --setting-sources chooses") {
  cli_fixture f;
  auto touch = [&] { return f.script({shell_reply("touch made.txt"), text_line("done")}); };
  auto made = f.dir / "work/made.txt";
  // Claude Code's keys troupe does not read (its sandbox, env, hooks of events troupe does not
  // have) do not stop a run.
  write_file(f.dir / "work/.claude/settings.json", R"js({
    "permissions": {"allow": ["Bash(touch *)"], "defaultMode": "acceptEdits"},
    "sandbox": {"enabled": true, "network": {"allowedDomains": ["x"]}},
    "env": {"A": "1"},
    "hooks": {"Notification": [{"hooks": [{"type": "command", "command": "true"}]}],
              "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "prompt", "prompt": "ok?"}]}]}})js");
  auto r = claude(f, {"-p", "go", "--model", touch()});
  CHECK(r.exit_code == 0);
  CHECK(std::filesystem::exists(made));
  CHECK(r.err.find("hook of type \"prompt\"") != std::string::npos);
  std::filesystem::remove(made);
  CHECK(claude(f, {"-p", "go", "--model", touch(), "--setting-sources", "user,local"}).exit_code ==
        1);
  CHECK_FALSE(std::filesystem::exists(made));
  CHECK(claude(f, {"-p", "go", "--model", touch(), "--setting-sources="}).exit_code == 1);
  // The local file is local's.
  std::filesystem::remove(f.dir / "work/.claude/settings.json");
  write_file(f.dir / "work/.claude/settings.local.json",
             R"js({"permissions": {"allow": ["Bash(touch *)"]}})js");
  CHECK(claude(f, {"-p", "go", "--model", touch(), "--setting-sources", "project"}).exit_code == 1);
  CHECK(claude(f, {"-p", "go", "--model", touch(), "--setting-sources", "project,local"})
          .exit_code == 0);
  // A deny in troupe's own local settings holds over an allow.
  write_file(f.dir / "work/.troupe/settings.local.json",
             R"js({"permissions": {"deny": ["Bash(touch *)"]}})js");
  std::filesystem::remove(made);
  CHECK(claude(f, {"-p", "go", "--model", touch()}).exit_code == 1);
  CHECK_FALSE(std::filesystem::exists(made));
  check_refused(claude(f, {"-p", "go", "--model", touch(), "--setting-sources", "user,bogus"}),
                "invalid --setting-sources 'user,bogus'");
  write_file(f.dir / "work/.claude/settings.local.json", "{");
  check_refused(claude(f, {"-p", "go", "--model", touch()}), ".claude/settings.local.json");
}

TEST_CASE("sessions: a UUID id, --fork-session, --no-session-persistence") {
  cli_fixture f;
  const std::string uuid = "3f2a9c1e-7b4d-4e8a-9c2f-1a2b3c4d5e6f";
  auto first = claude(f, {"-p", "one", "--model", f.script({text_line("1")}), "--session-id", uuid});
  CHECK(first.exit_code == 0);
  CHECK(std::filesystem::exists(session_dir(f, uuid) / "transcript.jsonl"));
  auto fork = claude(f, {"-p", "two", "--model", f.script({text_line("2")}), "--resume", uuid,
                         "--fork-session", "--output-format", "json"});
  CHECK(fork.exit_code == 0);
  auto fork_id = json::parse(fork.out)["session_id"].get<std::string>();
  CHECK(fork_id != uuid);
  CHECK(read_jsonl(session_dir(f, uuid) / "transcript.jsonl").size() == 2);

  // Not kept: gone at the end, never listed.
  auto unkept = claude(f, {"-p", "three", "--model", f.script({text_line("3")}),
                           "--no-session-persistence", "--output-format", "json"});
  CHECK(unkept.exit_code == 0);
  auto unkept_id = json::parse(unkept.out)["session_id"].get<std::string>();
  CHECK_FALSE(std::filesystem::exists(session_dir(f, unkept_id)));
  // What a killed run left behind (marked in session.json) is dropped by the next `troupe ls`.
  auto left = session_dir(f, "left-behind");
  write_file(left / "transcript.jsonl", R"js({"role":"user","content":"x","id":"m1"})js" "\n");
  write_file(left / "session.json", R"js({"id":"left-behind","persist":false,"state":"running"})js");
  auto ls = run_troupe({"ls", "--json"}, f.options());
  CHECK(ls.exit_code == 0);
  CHECK(ls.out.find(uuid) != std::string::npos);
  CHECK(ls.out.find("left-behind") == std::string::npos);
  CHECK_FALSE(std::filesystem::exists(left));
  // A session that exists cannot go unkept; its fork can.
  check_refused(claude(f, {"-p", "four", "--model", f.script({text_line("4")}), "--resume", uuid,
                           "--no-session-persistence"}),
                "--no-session-persistence would remove session " + uuid);
  auto unkept_fork = claude(f, {"-p", "four", "--model", f.script({text_line("4")}), "--resume",
                                uuid, "--fork-session", "--no-session-persistence"});
  CHECK(unkept_fork.exit_code == 0);
  CHECK(std::filesystem::exists(session_dir(f, uuid)));
}

TEST_CASE("--max-budget-usd ends the run once its cost reaches the cap") {
  // claude-sonnet-4-5 costs $3 per million input tokens: the first step costs $3.
  const std::string costly = R"js([
    {"text": "", "tool_calls": [{"name": "shell", "input": {"command": "echo one"}}],
     "usage": {"input_tokens": 1000000, "output_tokens": 10}},
    {"text": "", "tool_calls": [{"name": "shell", "input": {"command": "echo two"}}],
     "usage": {"input_tokens": 1000000, "output_tokens": 10}},
    {"text": "Done."}])js";
  cli_fixture f;
  auto run_with = [&](const std::string& budget, fake_server& server) {
    return claude(f, {"-p", "go", "--model", "sonnet", "--allowedTools", "Bash", "--output-format",
                      "stream-json", "--max-budget-usd", budget},
                  {}, anthropic_at(server));
  };
  {
    fake_server server{costly};
    auto r = run_with("1", server);
    CHECK(r.exit_code == 1);
    auto result = last_line(r);
    CHECK(result["subtype"] == "error_max_budget_usd");
    CHECK(result["terminal_reason"] == "max_budget");
    CHECK(result["is_error"] == true);
    CHECK(result["error"].get<std::string>().find("--max-budget-usd $1.0000") != std::string::npos);
    CHECK(server.requests().size() == 1); // no step after the cap
  }
  {
    fake_server server{costly};
    auto r = run_with("10", server);
    CHECK(r.exit_code == 0);
    CHECK(server.requests().size() == 3);
  }
  auto model = f.script({text_line("x")});
  for (auto* bad : {"abc", "0", "-1", "nan", "inf", "1e999", " 1", "1$"}) {
    CAPTURE(bad);
    check_refused(claude(f, {"-p", "go", "--model", model, "--max-budget-usd", bad}),
                  "invalid --max-budget-usd");
  }
  check_refused(claude(f, {"-p", "go", "--model", "openai/my-model", "--max-budget-usd", "1"}, {},
                       {{"OPENAI_API_KEY", "k"}}),
                "the price of openai/my-model is not known");
  // A scripted model costs nothing: the cap is never reached.
  CHECK(claude(f, {"-p", "go", "--model", model, "--max-budget-usd", "0.01"}).exit_code == 0);
}

TEST_CASE("--mcp-config is checked, its servers started, and kept in session.json") {
  cli_fixture f;
  write_file(f.dir / "mcp.json", R"js({"mcpServers": {"files": {"command": "mcp-files"}}})js");
  auto r = claude(f, {"-p", "go", "--model", f.script({text_line("ok")}), "--session-id", "mcp",
                      "--mcp-config", (f.dir / "mcp.json").string(),
                      R"js({"mcpServers": {"web": {"type": "http", "url": "http://127.0.0.1:1"}}})js",
                      "--strict-mcp-config"});
  // Neither server can start: each is reported, and the run goes on without them.
  CHECK(r.exit_code == 0);
  CHECK(r.out == "ok\n");
  CHECK(r.err.find("troupe: MCP server files failed: command not found: mcp-files") !=
        std::string::npos);
  CHECK(r.err.find("troupe: MCP server web failed: ") != std::string::npos);
  auto info = read_json(session_dir(f, "mcp") / "session.json");
  CHECK(info["mcp_config"]["mcpServers"]["files"]["command"] == "mcp-files");
  CHECK(info["mcp_config"]["mcpServers"]["web"]["type"] == "http");
  CHECK(info["strict_mcp_config"] == true);
  auto model = f.script({text_line("ok")});
  check_refused(claude(f, {"-p", "go", "--model", model, "--mcp-config", "{bad"}),
                "--mcp-config JSON is not a JSON object");
  check_refused(claude(f, {"-p", "go", "--model", model, "--mcp-config", R"js({"servers": {}})js"}),
                "expected {\"mcpServers\"");
  check_refused(claude(f, {"-p", "go", "--model", model, "--mcp-config",
                           (f.dir / "none.json").string()}),
                "--mcp-config " + (f.dir / "none.json").string());
}

TEST_CASE("flags troupe cannot honour: tuning ones are named once, others refused") {
  cli_fixture f;
  auto model = [&] { return f.script({text_line("ok")}); };
  auto r = claude(f, {"-p", "go", "--model", model(), "--effort", "high", "--thinking=adaptive",
                      "--max-thinking-tokens", "1024", "--betas", "a", "b", "--debug",
                      "--debug-file", (f.dir / "debug.log").string(), "--include-hook-events",
                      "--effort=low", "--agent", "reviewer", "--plugin-dir", "p", "--ide",
                      "--replay-user-messages", "--await-initialize", "--verbose"});
  CHECK(r.exit_code == 0);
  auto lines = split_lines(r.err);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == "troupe: ignored (Claude Code options troupe has no counterpart for): "
                    "--effort, --thinking, --max-thinking-tokens, --betas, --debug, --debug-file, "
                    "--include-hook-events, --agent, --plugin-dir, --ide, --replay-user-messages");
  CHECK_FALSE(std::filesystem::exists(f.dir / "debug.log"));
  check_refused(claude(f, {"-p", "go", "--model", model(), "--json-schema", "{}"}),
                "--json-schema is not supported");
  check_refused(claude(f, {"-p", "go", "--model", model(), "--resume-session-at", "m1"}),
                "--resume-session-at is not supported");
  check_refused(claude(f, {"-p", "go", "--model", model(), "--bogus-flag"}), "--bogus-flag");
  // A bad run prints its one error and not the note.
  check_refused(claude(f, {"-p", "go", "--model", model(), "--effort", "high", "--max-turns", "x"}),
                "invalid --max-turns");
}

TEST_CASE("the Agent SDK's command line runs") {
  cli_fixture f;
  auto model = f.script({shell_reply("touch made.txt"), text_line("made it")});
  process_options piped;
  piped.stdin_text = "make the file";
  // As the SDK spawns Claude Code (sdk.mjs): every value after `=`, the prompt on stdin.
  auto r = claude(f,
                  {"--output-format", "stream-json", "--verbose", "--thinking=adaptive",
                   "--effort=high", "--max-turns=5", "--max-budget-usd=2", "--model=" + model,
                   "--permission-mode=acceptEdits", "--allowedTools=Bash(touch *),Read",
                   "--disallowedTools=Bash(rm *)", "--tools=Bash,Read,Edit",
                   "--setting-sources=", "--include-partial-messages", "--no-session-persistence",
                   "--add-dir=" + (f.dir / "work").string(),
                   "--fallback-model=" + f.script({text_line("fallback")}),
                   "--session-id=0f9d2a3e-5b1c-4d7e-8f6a-9b8c7d6e5f4a", "--settings",
                   R"js({"permissions":{"deny":["Bash(curl *)"]}})js"},
                  piped);
  CHECK_MESSAGE(r.exit_code == 0, r.err);
  CHECK(last_line(r)["result"] == "made it");
  CHECK(std::filesystem::exists(f.dir / "work/made.txt"));
  CHECK(tools_of(init_of(r)) == strings{"shell", "read", "write", "edit", "patch"});
  CHECK_FALSE(std::filesystem::exists(session_dir(f, "0f9d2a3e-5b1c-4d7e-8f6a-9b8c7d6e5f4a")));
}
