#include <doctest/doctest.h>

#include "orchestrator/claude_flags.hpp"
#include "support/test_support.hpp"

using namespace troupe;
using strings = std::vector<std::string>;

namespace {

const strings subcommands = {"run", "chat", "ls", "show", "rm", "notify", "fleet",
                             "sandbox", "demo", "interrupt", "background"};

// troupe's options that take a value, as CLI11 would say.
bool takes_value(const std::string&, const std::string& option) {
  for (auto* valued : {"--model", "-m", "--cwd", "--max-steps", "--max-turns", "--output-format",
                       "--system-prompt", "--log-level", "--log-file", "--allow", "--settings"})
    if (option == valued)
      return true;
  return false;
}

expected<rewritten_argv> rewrite(const strings& args, bool terminal = false) {
  return rewrite_claude_argv(args, subcommands, terminal, takes_value);
}

strings args_of(const strings& args, bool terminal = false) {
  auto r = rewrite(args, terminal);
  REQUIRE_MESSAGE(r, r.error());
  return r->args;
}

} // namespace

TEST_CASE("a tool list splits at commas and blanks, never inside parentheses") {
  CHECK(split_tool_list("Bash(git *) Edit") == strings{"Bash(git *)", "Edit"});
  CHECK(split_tool_list("Bash(git *),Edit") == strings{"Bash(git *)", "Edit"});
  CHECK(split_tool_list("  Read ,, Bash(npm run test:*)\tWrite(a, b) ") ==
        strings{"Read", "Bash(npm run test:*)", "Write(a, b)"});
  CHECK(split_tool_list("Bash(echo (a) b),Read") == strings{"Bash(echo (a) b)", "Read"});
  CHECK(split_tool_list("").empty());
  CHECK(split_tool_list(" , ").empty());
  // An unclosed parenthesis keeps the rest in its entry (the rule parser then refuses it).
  CHECK(split_tool_list("Bash(git, Read") == strings{"Bash(git, Read"});
}

TEST_CASE("the first word picks the subcommand, and anything else is a run") {
  CHECK(args_of({"-p", "hi"}) == strings{"run", "-p", "hi"});
  CHECK(args_of({"hi", "there"}) == strings{"run", "hi", "there"});
  CHECK(args_of({"ls", "--json"}) == strings{"ls", "--json"});
  CHECK(args_of({"run", "x"}) == strings{"run", "x"});
  CHECK(args_of({"--", "--weird prompt"}) == strings{"run", "--", "--weird prompt"});
  CHECK(args_of({"--help"}) == strings{"--help"});
  CHECK(args_of({"-v"}) == strings{"-v"});
  // No words: a chat on a terminal, else a run whose prompt is stdin.
  CHECK(args_of({}, true) == strings{"chat"});
  CHECK(args_of({}, false) == strings{"run"});
  CHECK(args_of({"--log-level", "debug"}, true) == strings{"--log-level", "debug", "chat"});
  CHECK(args_of({"--log-level=debug", "ls"}) == strings{"--log-level=debug", "ls"});
  CHECK(args_of({"--log-file", "f", "-p", "x"}) == strings{"--log-file", "f", "run", "-p", "x"});
  // Other subcommands' words are theirs, untouched.
  CHECK(args_of({"notify", "s", "--tools", "x"}) == strings{"notify", "s", "--tools", "x"});
}

TEST_CASE("list flags take every word up to the next flag, or one with =") {
  CHECK(args_of({"-p", "go", "--allowedTools", "Bash(git *)", "Read", "--max-turns", "3"}) ==
        strings{"run", "-p", "go", "--allowed-tools=Bash(git *)", "--allowed-tools=Read",
                "--max-turns", "3"});
  // With `=`, one value: the next word is the prompt.
  CHECK(args_of({"--allowedTools=Bash", "Read"}) == strings{"run", "--allowed-tools=Bash", "Read"});
  CHECK(args_of({"--disallowed-tools", "Edit", "--", "-x"}) ==
        strings{"run", "--disallowed-tools=Edit", "--", "-x"});
  // An empty value stays one (CLI11 would take `--tools=` as a missing value).
  CHECK(args_of({"--tools=", "go"}) == strings{"run", "--tools", "", "go"});
  CHECK(args_of({"--tools", "", "go"}) == strings{"run", "--tools", "", "--tools=go"});
  CHECK(args_of({"chat", "--mcp-config", "a.json", "b.json"}) ==
        strings{"chat", "--mcp-config=a.json", "--mcp-config=b.json"});
  auto none = rewrite({"-p", "--allowedTools", "--max-turns", "2"});
  REQUIRE_FALSE(none);
  CHECK(none.error() == "--allowedTools needs at least one value");
}

TEST_CASE("a troupe option's value is never read as a Claude Code flag") {
  CHECK(args_of({"--system-prompt", "--debug", "go"}) ==
        strings{"run", "--system-prompt", "--debug", "go"});
  CHECK(args_of({"-m", "--tools", "go"}) == strings{"run", "-m", "--tools", "go"});
  CHECK(args_of({"--model=x", "--tools", "Read"}) == strings{"run", "--model=x", "--tools=Read"});
}

TEST_CASE("ignored flags go with their values and are named once") {
  auto r = rewrite({"-p", "go", "--effort", "high", "--thinking=adaptive", "--betas", "a", "b",
                    "--debug", "--include-hook-events", "--effort=low", "--debug-file", "-x",
                    "--max-turns", "2"});
  REQUIRE(r);
  CHECK(r->args == strings{"run", "-p", "go", "--max-turns", "2"});
  CHECK(r->ignored == strings{"--effort", "--thinking", "--betas", "--debug",
                              "--include-hook-events", "--debug-file"});
  // --debug's filter is optional: the next word is taken unless it is a flag.
  auto filtered = rewrite({"--debug", "api,hooks", "-p", "go"});
  REQUIRE(filtered);
  CHECK(filtered->args == strings{"run", "-p", "go"});
  auto missing = rewrite({"-p", "go", "--effort"});
  REQUIRE_FALSE(missing);
  CHECK(missing.error() == "--effort needs a value");
}

TEST_CASE("a flag whose meaning would be lost is refused") {
  for (auto& args : {strings{"-p", "x", "--json-schema", "{}"},
                     strings{"--resume-session-at", "abc", "-p", "x"},
                     strings{"--agents={}", "x"}, strings{"chat", "--worktree"}}) {
    auto r = rewrite(args);
    REQUIRE_FALSE(r);
    CHECK(r.error().find(" is not supported: ") != std::string::npos);
  }
  // Not after `--`: there it is the prompt.
  CHECK(args_of({"--", "--json-schema"}) == strings{"run", "--", "--json-schema"});
}

TEST_CASE("setting sources are user, project and local, comma separated") {
  auto all = parse_setting_sources("user,project,local");
  REQUIRE(all);
  CHECK((all->user && all->project && all->local));
  auto some = parse_setting_sources(" project , local");
  REQUIRE(some);
  CHECK((!some->user && some->project && some->local));
  auto none = parse_setting_sources("");
  REQUIRE(none);
  CHECK((!none->user && !none->project && !none->local));
  for (auto* bad : {"users", "user,,local", "user,", "policy"}) {
    CAPTURE(bad);
    auto r = parse_setting_sources(bad);
    REQUIRE_FALSE(r);
    CHECK(r.error().find("invalid --setting-sources") == 0);
  }
}

TEST_CASE("JSON arguments are inline objects or files") {
  CHECK(is_inline_json(" \n{\"a\":1}"));
  CHECK_FALSE(is_inline_json("settings.json"));
  CHECK_FALSE(is_inline_json("[1]"));
  auto inline_object = json_object_argument(R"js({"permissions":{"allow":["Bash(ls *)"]}})js", "--settings");
  REQUIRE(inline_object);
  CHECK((*inline_object)["permissions"]["allow"][0] == "Bash(ls *)");
  auto bad = json_object_argument("{bad json", "--settings");
  REQUIRE_FALSE(bad);
  CHECK(bad.error() == "--settings JSON is not a JSON object");
  auto missing = json_object_argument("/no/such/file.json", "--settings");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().find("--settings /no/such/file.json: ") == 0);
}

TEST_CASE("MCP configurations must hold an object of servers, and merge") {
  troupe::test::temp_dir dir;
  troupe::test::write_file(dir / "mcp.json",
                           R"js({"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}})js");
  auto merged = merge_mcp_configs({(dir / "mcp.json").string(),
                                   R"js({"mcpServers": {"b": {"command": "z"}}})js"});
  REQUIRE(merged);
  CHECK(*merged == nlohmann::json::parse(
                     R"js({"mcpServers": {"a": {"command": "x"}, "b": {"command": "z"}}})js"));
  for (auto* bad : {"{", "{}", R"js({"mcpServers": []})js", R"js({"mcpServers": {"a": 1}})js"}) {
    CAPTURE(bad);
    CHECK_FALSE(merge_mcp_configs({bad}));
  }
}

TEST_CASE("--tools names the tools offered, in either spelling") {
  strings builtin = {"shell", "read", "write", "edit", "patch", "glob", "grep"};
  auto some = offered_tool_names({"Bash,Read", "Edit"}, builtin);
  REQUIRE(some);
  CHECK(*some == strings{"shell", "read", "edit", "patch", "write"});
  CHECK(*offered_tool_names({"default"}, builtin) == builtin);
  CHECK(offered_tool_names({""}, builtin)->empty());
  CHECK(*offered_tool_names({"grep glob"}, builtin) == strings{"grep", "glob"});
  auto unknown = offered_tool_names({"Bash,WebFetch"}, builtin);
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().find("unknown tool 'WebFetch' in --tools") == 0);
}
