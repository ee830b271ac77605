// Claude Code's project files through the troupe binary: CLAUDE.md and AGENTS.md in the system
// prompt (read from the repository's root down, the user's first, listed in the init line), and
// custom subagent types from .claude/agents.

#include <doctest/doctest.h>

#include <sys/stat.h>

#include "support/cli_fixture.hpp"
#include "support/provider_run.hpp"

using namespace troupe;
using namespace troupe::test;
using nlohmann::json;
using strings = std::vector<std::string>;

namespace {

/// The system prompt of a recorded OpenAI request.
std::string system_prompt(const json& request) {
  return request["body"]["messages"][0]["content"].get<std::string>();
}

/// The tool names a recorded OpenAI request offers.
strings offered_tools(const json& request) {
  strings names;
  for (auto& tool : request["body"]["tools"])
    names.push_back(tool["function"]["name"]);
  return names;
}

/// A model reply that launches one foreground subagent.
std::string launch(const json& input) {
  return json{{"tool_calls", json::array({{{"name", "task"}, {"input", input}}})}}.dump();
}

std::string agent_file(const std::string& front, const std::string& body) {
  return "---\n" + front + "\n---\n" + body + "\n";
}

} // namespace

TEST_CASE("CLAUDE.md, AGENTS.md and the user's file reach the system prompt, in order") {
  provider_run p;
  std::filesystem::create_directories(p.dir / ".git");
  write_file(p.dir / "config/troupe/CLAUDE.md", "The user's rule.");
  write_file(p.dir / "CLAUDE.md", "The repository's rule.");
  write_file(p.dir / "work/AGENTS.md", "The workspace's rule.");
  write_file(p.dir / "work/CLAUDE.local.md", "My own rule.\n@notes/extra.md");
  write_file(p.dir / "work/notes/extra.md", "An imported rule.");
  fake_server server{"[" + launch({{"prompt", "look around"}}) +
                     R"(, {"text": "child done"}, {"text": "parent done"}])"};
  auto r = p.run(server, {"go"});
  REQUIRE(r.exit_code == 0);
  auto init = of_type(r, "system", "init");
  REQUIRE(init.size() == 1);
  CHECK(init[0]["memory_files"] ==
        json{(p.dir / "config/troupe/CLAUDE.md").string(), (p.dir / "CLAUDE.md").string(),
             (p.dir / "work/AGENTS.md").string(), (p.dir / "work/CLAUDE.local.md").string(),
             (p.dir / "work/notes/extra.md").string()});
  auto requests = server.requests();
  REQUIRE(requests.size() == 3);
  auto prompt = system_prompt(requests[0]);
  auto at = [&](const std::string& text) { return prompt.find(text); };
  CHECK(at("# Project instructions") != std::string::npos);
  CHECK(at("## " + (p.dir / "config/troupe/CLAUDE.md").string()) < at("The user's rule."));
  CHECK(at("The user's rule.") < at("The repository's rule."));
  CHECK(at("The repository's rule.") < at("The workspace's rule."));
  CHECK(at("The workspace's rule.") < at("My own rule.\nAn imported rule."));
  // The subagent reads the same instructions.
  auto child = system_prompt(requests[1]);
  CHECK(child.find("The workspace's rule.") != std::string::npos);
  CHECK(child.find("You are a subagent") != std::string::npos);
}

TEST_CASE("--bare and \"projectInstructions\": false leave the files out") {
  provider_run p;
  std::filesystem::create_directories(p.dir / "work/.git");
  write_file(p.dir / "work/CLAUDE.md", "A rule.");
  {
    fake_server server{R"([{"text": "ok"}])"};
    auto r = p.run(server, {"--bare", "go"});
    REQUIRE(r.exit_code == 0);
    CHECK(of_type(r, "system", "init")[0]["memory_files"] == json::array());
    CHECK(system_prompt(server.requests()[0]).find("A rule.") == std::string::npos);
  }
  {
    write_file(p.dir / "off.json", R"({"projectInstructions": false})");
    fake_server server{R"([{"text": "ok"}])"};
    auto r = p.run(server, {"--settings", (p.dir / "off.json").string(), "go"});
    REQUIRE(r.exit_code == 0);
    CHECK(system_prompt(server.requests()[0]).find("A rule.") == std::string::npos);
  }
  write_file(p.dir / "bad.json", R"({"projectInstructions": "no"})");
  fake_server server{R"([{"text": "ok"}])"};
  auto bad = p.run(server, {"--settings", (p.dir / "bad.json").string(), "go"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("\"projectInstructions\" must be true or false") != std::string::npos);
}

TEST_CASE("a resumed session reads the instruction files again") {
  provider_run p;
  std::filesystem::create_directories(p.dir / "work/.git");
  write_file(p.dir / "work/CLAUDE.md", "First version.");
  fake_server server{R"([{"text": "one"}, {"text": "two"}])"};
  REQUIRE(p.run(server, {"--session-id", "again", "go"}).exit_code == 0);
  write_file(p.dir / "work/CLAUDE.md", "Second version.");
  REQUIRE(p.run(server, {"--resume", "again", "more"}).exit_code == 0);
  auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  CHECK(system_prompt(requests[0]).find("First version.") != std::string::npos);
  CHECK(system_prompt(requests[1]).find("Second version.") != std::string::npos);
  CHECK(system_prompt(requests[1]).find("First version.") == std::string::npos);
}

TEST_CASE("an unreadable or hostile CLAUDE.md is a warning, never a failure or a hang") {
  cli_fixture f;
  std::filesystem::create_directories(f.dir / "work/.git");
  write_file(f.dir / "shadow", "root:secret");
  ::chmod((f.dir / "shadow").c_str(), 0);
  std::filesystem::create_symlink(f.dir / "shadow", f.dir / "work/CLAUDE.md");
  REQUIRE(::mkfifo((f.dir / "work/AGENTS.md").c_str(), 0600) == 0);
  auto r = f.run({"--model", f.script({{{"text", "fine"}}}), "--output-format", "stream-json",
                  "go"});
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("AGENTS.md: not read: not a regular file") != std::string::npos);
  // The link leads outside the project: not read whatever its mode.
  CHECK(r.err.find("CLAUDE.md: not read: it leads to") != std::string::npos);
  CHECK(json::parse(split_lines(r.out)[0])["memory_files"] == json::array());
  ::chmod((f.dir / "shadow").c_str(), 0600);
}

TEST_CASE("a custom subagent type runs with its own instructions, tools and listing") {
  provider_run p;
  std::filesystem::create_directories(p.dir / "work/.git");
  write_file(p.dir / "work/.claude/agents/reviewer.md",
             agent_file("name: reviewer\ndescription: Reviews a diff.\ntools: Read, Grep",
                        "You review diffs and nothing else."));
  write_file(p.dir / "config/troupe/agents/reviewer.md",
             agent_file("name: reviewer\ndescription: The user's, replaced.", "never"));
  write_file(p.dir / "config/troupe/agents/writer.md",
             agent_file("name: writer\ndescription: Writes docs.", "You write docs."));
  fake_server server{"[" + launch({{"prompt", "review it"}, {"subagent_type", "reviewer"}}) +
                     R"(, {"text": "looks good"}, )" +
                     launch({{"prompt", "x"}, {"subagent_type", "../../etc"}}) + R"(, )" +
                     launch({{"prompt", "plain"}, {"subagent_type", "general-purpose"}}) +
                     R"(, {"text": "plain done"}, {"text": "all done"}])"};
  auto r = p.run(server, {"--session-id", "typed", "go"});
  REQUIRE(r.exit_code == 0);
  auto requests = server.requests();
  REQUIRE(requests.size() == 6);
  // The parent's task tool lists the types.
  std::string task_description;
  for (auto& tool : requests[0]["body"]["tools"])
    if (tool["function"]["name"] == "task")
      task_description = tool["function"]["description"];
  CHECK(task_description.find("- reviewer: Reviews a diff.") != std::string::npos);
  CHECK(task_description.find("- writer: Writes docs.") != std::string::npos);
  CHECK(task_description.find("The user's, replaced.") == std::string::npos);
  // The typed child: its tools and its prompt after troupe's.
  CHECK(offered_tools(requests[1]) == strings{"read", "grep"});
  auto child = system_prompt(requests[1]);
  CHECK(child.find("You review diffs and nothing else.") < child.find("You are a subagent"));
  // An unknown type is an error result listing the known ones; nothing is launched.
  auto log = read_jsonl(p.dir / "home/sessions/typed/transcript.jsonl");
  std::string refused;
  for (auto& m : log)
    if (m["role"] == "tool" && m["is_error"] == true)
      refused = m["content"];
  CHECK(refused == "unknown subagent_type '../../etc'; the known types: general-purpose, "
                   "reviewer, writer");
  // general-purpose is troupe's own subagent: every tool.
  CHECK(offered_tools(requests[4]).size() == offered_tools(requests[0]).size());
  // The typed agent's session.json keeps its type, for a resume.
  bool typed_info = false;
  for (auto& entry : std::filesystem::directory_iterator(p.dir / "home/sessions/typed/agents"))
    if (read_json(entry.path() / "session.json").value("agent_type", "") == "reviewer")
      typed_info = true;
  CHECK(typed_info);
}

TEST_CASE("bad subagent definitions stop the start with the file and line, exit 2") {
  cli_fixture f;
  std::filesystem::create_directories(f.dir / "work/.git");
  write_file(f.dir / "work/.claude/agents/bad.md",
             agent_file("name: bad\ndescription: d\ntools: Bash, rm -rf", "x"));
  auto r = f.run({"--model", f.script({{{"text", "never"}}}), "go"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find((f.dir / "work/.claude/agents/bad.md").string() +
                   ":4: unknown tool 'rm -rf' in tools") != std::string::npos);
  CHECK(f.transcripts().empty());
  // --bare reads none of them.
  CHECK(f.run({"--bare", "--model", f.script({{{"text", "fine"}}}), "go"}).exit_code == 0);
}

TEST_CASE("a fleet's tasks read the files of their own cwd, once per directory") {
  provider_run p;
  std::filesystem::create_directories(p.dir / "work/.git");
  write_file(p.dir / "work/CLAUDE.md", "The root's rule.");
  write_file(p.dir / "work/sub/CLAUDE.md", "The sub-directory's rule.");
  REQUIRE(::mkfifo((p.dir / "work/sub/AGENTS.md").c_str(), 0600) == 0); // warned about once
  write_file(p.dir / "work/broken/.claude/agents/x.md", "no front matter");
  std::string tasks;
  for (auto [id, cwd] : {std::pair{"r1", ""}, {"s1", "sub"}, {"s2", "sub"}, {"s3", "sub"},
                         {"b1", "broken"}}) {
    json task = {{"id", id}, {"prompt", std::string{"task "} + id}};
    if (*cwd)
      task["cwd"] = cwd;
    tasks += task.dump() + "\n";
  }
  write_file(p.dir / "tasks.jsonl", tasks);
  fake_server server{R"([{"text": "ok"}])", true};
  process_options opts;
  opts.env["TROUPE_HOME"] = (p.dir / "home").string();
  opts.env["XDG_CONFIG_HOME"] = (p.dir / "config").string();
  opts.env["TROUPE_MODEL"] = "";
  opts.env["TROUPE_MAX_STEPS"] = "";
  opts.env["OPENAI_API_KEY"] = "test-key";
  opts.env["OPENAI_BASE_URL"] = server.url() + "/v1";
  auto r = run_troupe({"fleet", "--cwd", (p.dir / "work").string(), (p.dir / "tasks.jsonl").string(),
                       "--out", (p.dir / "results.jsonl").string(), "--model",
                       "openai/test-model"},
                      opts);
  CHECK(r.exit_code == 1); // the broken task failed
  std::map<std::string, json> results;
  for (auto& line : read_jsonl(p.dir / "results.jsonl"))
    results[line["id"]] = line;
  CHECK(results["r1"]["terminal_reason"] == "completed");
  CHECK(results["s3"]["terminal_reason"] == "completed");
  CHECK(results["b1"]["error"].get<std::string>().find("x.md:1: expected front matter") !=
        std::string::npos);
  size_t sub_prompts = 0;
  for (auto& request : server.requests()) {
    auto prompt = system_prompt(request);
    auto user = request["body"]["messages"][1]["content"].dump();
    CHECK(prompt.find("The root's rule.") != std::string::npos);
    bool in_sub = user.find("task s") != std::string::npos;
    CHECK((prompt.find("The sub-directory's rule.") != std::string::npos) == in_sub);
    sub_prompts += in_sub ? 1 : 0;
  }
  CHECK(sub_prompts == 3);
  size_t warned = 0;
  for (size_t at = r.err.find("AGENTS.md: not read"); at != std::string::npos;
       at = r.err.find("AGENTS.md: not read", at + 1))
    ++warned;
  CHECK(warned == 1);
}
