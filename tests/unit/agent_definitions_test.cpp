#include <doctest/doctest.h>

#include "orchestrator/agent_definitions.hpp"
#include "support/test_support.hpp"

using namespace troupe;
using namespace troupe::test;
using strings = std::vector<std::string>;

TEST_CASE("a definition in Claude Code's layout: front matter and a body") {
  auto type = parse_agent_definition("---\n"
                                     "name: code-reviewer\n"
                                     "description: \"Reviews code: use after a change\"\n"
                                     "tools: Read, Grep, Glob, shell\n"
                                     "model: inherit\n"
                                     "color: blue   # ignored\n"
                                     "---\n"
                                     "\n"
                                     "You review code.\n"
                                     "Be brief.\n",
                                     "a.md");
  REQUIRE(type);
  CHECK(type->name == "code-reviewer");
  CHECK(type->description == "Reviews code: use after a change");
  CHECK(type->tools == strings{"read", "grep", "glob", "shell"});
  CHECK(type->model.empty());
  CHECK(type->prompt == "You review code.\nBe brief.");
  CHECK(type->file == "a.md");
}

TEST_CASE("front matter values: lists three ways, quotes, blocks and a model spec") {
  auto flow = parse_agent_definition("---\nname: a\ndescription: 'it''s here'\n"
                                     "tools: [Bash, 'Edit']\nmodel: openai/gpt-4.1\n---\nbody",
                                     "f.md");
  REQUIRE(flow);
  CHECK(flow->description == "it's here");
  CHECK(flow->tools == strings{"shell", "edit"});
  CHECK(flow->model == "openai/gpt-4.1");
  // Claude Code's aliases and bare names, as --model takes them.
  auto alias = parse_agent_definition("---\nname: a\ndescription: d\nmodel: sonnet\n---\n", "x.md");
  REQUIRE(alias);
  CHECK(alias->model.rfind("anthropic/claude-sonnet", 0) == 0);
  auto block = parse_agent_definition("---\nname: b\ndescription: >\n  one\n  two\n\n  three\n"
                                      "tools:\n  - Read\n  - LS\ndisallowedTools: Bash\n---\n",
                                      "b.md");
  REQUIRE(block);
  CHECK(block->description == "one two\nthree");
  CHECK(block->tools == strings{"read", "ls"});
  CHECK(block->disallowed_tools == strings{"shell"});
  CHECK(block->prompt.empty());
}

TEST_CASE("bad front matter names the file and the line") {
  struct row {
    const char* text;
    const char* says;
  };
  for (auto r : {
         row{"no front matter", "x.md:1: expected front matter"},
         row{"---\nname: a\ndescription: d\n", "x.md:1: the front matter is not closed"},
         row{"---\nname: a\njust words\n---\n", "x.md:3: expected `key: value`"},
         row{"---\nname: a\nname: b\ndescription: d\n---\n", "x.md:3: `name` is given twice"},
         row{"---\ndescription: d\n---\n", "x.md:1: the front matter has no `name`"},
         row{"---\nname: a\n---\n", "no `description`"},
         row{"---\nname: ../../x\ndescription: d\n---\n", "x.md:2: name '../../x' must be"},
         row{"---\nname: a\ndescription: d\ntools: Bash, rm -rf\n---\n",
             "x.md:4: unknown tool 'rm -rf' in tools"},
         row{"---\nname: a\ndescription: d\ntools: WebFetch\n---\n", "unknown tool 'WebFetch'"},
         row{"---\nname: a\ndescription: \"open\n---\n", "x.md:3: a quote (\") is not closed"},
         row{"---\nname: a\ndescription: d\ntools: [Read\n---\n", "x.md:4: a list `[…]` is not"},
         row{"---\nname: a\ndescription: d\nmodel: llama3\n---\n", "x.md:4: unknown model 'llama3'"},
         row{"---\nname: a\ndescription: d\n  stray: indent\n---\n", "x.md:4: an indented line"},
         row{"---\nname: a\ndescription: d\ntools: ,\n---\n", "x.md:4: `tools` names no tool"},
       }) {
    CAPTURE(r.text);
    auto type = parse_agent_definition(r.text, "x.md");
    REQUIRE_FALSE(type);
    CHECK(type.error().find(r.says) != std::string::npos);
  }
}

TEST_CASE("the project's types replace the user's of the same name, and two in one directory fail") {
  temp_dir dir;
  auto home = dir / "home";
  auto user = dir / "home/.config/troupe";
  auto work = dir / "home/repo";
  std::filesystem::create_directories(work / ".git");
  auto define = [](const std::string& name, const std::string& body) {
    return "---\nname: " + name + "\ndescription: " + body + "\n---\n" + body;
  };
  write_file(user / "agents/reviewer.md", define("reviewer", "the user's"));
  write_file(user / "agents/writer.md", define("writer", "the user's writer"));
  write_file(work / ".claude/agents/reviewer.md", define("reviewer", "the project's"));
  write_file(work / ".troupe/agents/tester.md", define("tester", "troupe's tester"));
  write_file(work / ".claude/agents/notes.txt", "not a definition");
  auto types = read_agent_types(work, user, home);
  REQUIRE(types);
  strings names;
  for (auto& t : *types)
    names.push_back(t.name + ": " + t.description);
  CHECK(names == strings{"reviewer: the project's", "writer: the user's writer",
                         "tester: troupe's tester"});

  write_file(work / ".claude/agents/again.md", define("reviewer", "twice"));
  auto twice = read_agent_types(work, user, home);
  REQUIRE_FALSE(twice);
  CHECK(twice.error().find("reviewer.md: the agent name 'reviewer' is " +
                           (work / ".claude/agents/again.md").string() + "'s too") !=
        std::string::npos);
}

TEST_CASE("an agent file that leads out of the project, or is huge, is a start-up error") {
  temp_dir dir;
  auto work = dir / "home/repo";
  std::filesystem::create_directories(work / ".git");
  std::filesystem::create_directories(work / ".claude/agents");
  write_file(dir / "elsewhere.md", "---\nname: x\ndescription: d\n---\n");
  std::filesystem::create_symlink(dir / "elsewhere.md", work / ".claude/agents/x.md");
  auto out = read_agent_types(work, dir / "nouser", dir / "home");
  REQUIRE_FALSE(out);
  CHECK(out.error().find("outside the project") != std::string::npos);
  std::filesystem::remove(work / ".claude/agents/x.md");
  write_file(work / ".claude/agents/big.md", std::string(300 * 1024, 'x'));
  auto big = read_agent_types(work, dir / "nouser", dir / "home");
  REQUIRE_FALSE(big);
  CHECK(big.error().find("too large") != std::string::npos);
}
