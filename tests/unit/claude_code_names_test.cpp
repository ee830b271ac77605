#include <doctest/doctest.h>

#include "tools/claude_code_names.hpp"
#include "tools/edit.hpp"
#include "tools/permissions.hpp"
#include "tools/shell.hpp"
#include "tools/write.hpp"

using namespace troupe;
using nlohmann::json;

TEST_CASE("tool names go both ways, older Claude Code spellings coming in") {
  CHECK(claude_tool_name("shell") == "Bash");
  CHECK(claude_tool_name("todo") == "TodoWrite");
  CHECK(claude_tool_name("task") == "Task");
  CHECK(claude_tool_name("task_output") == "BashOutput");
  CHECK(claude_tool_name("task_wait") == "task_wait"); // Claude Code has none
  CHECK(troupe_tool_name("Bash") == std::optional<std::string>{"shell"});
  CHECK(troupe_tool_name("Agent") == std::optional<std::string>{"task"});
  CHECK(troupe_tool_name("KillBash") == std::optional<std::string>{"task_stop"});
  CHECK(troupe_tool_name("shell") == std::optional<std::string>{"shell"});
  CHECK(troupe_tool_name("complete") == std::optional<std::string>{"complete"});
  CHECK_FALSE(troupe_tool_name("WebFetch"));
  CHECK_FALSE(troupe_tool_name("bash")); // names are case-sensitive, as Claude Code's are
}

TEST_CASE("inputs are renamed field by field and come back as they went") {
  json edit = {{"path", "a.txt"}, {"old_string", "x"}, {"new_string", "y"}};
  auto claude = claude_tool_input("edit", edit);
  CHECK(claude == json{{"file_path", "a.txt"}, {"old_string", "x"}, {"new_string", "y"}});
  CHECK(troupe_tool_input("edit", claude) == edit);
  CHECK(claude_tool_input("shell", json{{"command", "ls"}}) == json{{"command", "ls"}});

  json read = {{"path", "f"}, {"start_line", 10}, {"end_line", 19}};
  auto read_claude = claude_tool_input("read", read);
  CHECK(read_claude == json{{"file_path", "f"}, {"offset", 10}, {"limit", 10}});
  CHECK(troupe_tool_input("read", read_claude) == read);
  CHECK(claude_tool_input("read", json{{"path", "f"}, {"end_line", 5}}) ==
        json{{"file_path", "f"}, {"limit", 5}});
  CHECK(troupe_tool_input("read", json{{"file_path", "f"}, {"limit", 5}}) ==
        json{{"path", "f"}, {"end_line", 5}});
  // Already troupe's: unchanged.
  CHECK(troupe_tool_input("read", read) == read);
  CHECK(claude_tool_input("grep", json{{"pattern", "x"}, {"ignore_case", true}}) ==
        json{{"pattern", "x"}, {"-i", true}});
  CHECK(claude_tool_input("write", json("not an object")) == json("not an object"));
}

TEST_CASE("rules in Claude Code's spelling judge troupe's tools") {
  CHECK(troupe_rule_texts("Bash(git *)") == std::vector<std::string>{"shell(git *)"});
  CHECK(troupe_rule_texts("Bash") == std::vector<std::string>{"shell"});
  CHECK(troupe_rule_texts("Edit(docs/**)") ==
        std::vector<std::string>{"edit(docs/**)", "patch(docs/**)", "write(docs/**)"});
  CHECK(troupe_rule_texts("WebFetch(domain:x)") == std::vector<std::string>{"WebFetch(domain:x)"});

  auto rules = parse_permission_rules("Bash(git status:*)");
  REQUIRE(rules);
  REQUIRE(rules->size() == 1);
  CHECK(rules->front().tool == "shell");
  CHECK(rules->front().text == "Bash(git status:*)");

  permission_policy policy;
  policy.context.cwd = "/work/project";
  policy.context.home = "/home/me";
  auto allow = parse_permission_rules("Bash(git status:*)");
  policy.rules.allow = *allow;
  auto shell = shell_tool();
  CHECK(policy.can_use_tool(shell, {{"command", "git status -s"}}).outcome ==
        permission_outcome::allow);
  CHECK(policy.can_use_tool(shell, {{"command", "rm -rf x"}}).outcome == permission_outcome::ask);

  auto edits = parse_permission_rules("Edit(docs/**)");
  REQUIRE(edits);
  policy.rules.allow = *edits;
  CHECK(policy.can_use_tool(write_tool(), {{"path", "docs/a.md"}, {"content", "x"}}).outcome ==
        permission_outcome::allow);
  CHECK(policy.can_use_tool(edit_tool(), {{"path", "src/a.cpp"}, {"old_string", "a"},
                                          {"new_string", "b"}})
          .outcome == permission_outcome::ask);

  auto bad = parse_permission_rules("Bash(");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().find("Bash(") != std::string::npos);
}
