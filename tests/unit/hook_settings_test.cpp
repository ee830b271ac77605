#include <doctest/doctest.h>

#include "actors/hook_runner.hpp"
#include "orchestrator/hook_settings.hpp"

using namespace troupe;
using nlohmann::json;

namespace {

hook_process_result ran(int code, std::string out, std::string err = "") {
  hook_process_result r;
  r.exit_code = code;
  r.out = std::move(out);
  r.err = std::move(err);
  return r;
}

} // namespace

TEST_CASE("hook settings in Claude Code's layout become commands, in order") {
  auto settings = json::parse(R"({"hooks": {
    "PreToolUse": [{"matcher": "shell|write", "hooks": [
      {"type": "command", "command": "check.sh", "timeout": 5},
      {"command": "log.sh"}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "stop.sh", "timeout": 0.5}]}]}})");
  auto commands = parse_hook_settings(settings, "s.json");
  REQUIRE(commands);
  REQUIRE(commands->size() == 3);
  CHECK((*commands)[0].event == hook_event::pre_tool_use);
  CHECK((*commands)[0].matcher == "shell|write");
  CHECK((*commands)[0].timeout == std::chrono::seconds{5});
  CHECK((*commands)[1].command == "log.sh");
  CHECK((*commands)[1].timeout == std::chrono::seconds{60}); // the default
  CHECK((*commands)[2].event == hook_event::stop);
  CHECK((*commands)[2].timeout == std::chrono::milliseconds{500});
  CHECK(parse_hook_settings(json::object(), "s.json")->empty());
}

TEST_CASE("bad hook settings are errors that name the file and what is wrong") {
  struct row {
    const char* settings;
    const char* says;
  };
  for (auto r : {row{R"({"hooks": []})", "\"hooks\" must be an object"},
                 row{R"({"hooks": {"BeforeAll": []}})", "unknown hook event \"BeforeAll\""},
                 row{R"({"hooks": {"Stop": {}}})", "hooks.Stop must be an array"},
                 row{R"({"hooks": {"Stop": [{"command": "x"}]}})", "with a \"hooks\" array"},
                 row{R"({"hooks": {"Stop": [{"hooks": [{"type": "prompt", "command": "x"}]}]}})",
                     "hook type \"prompt\""},
                 row{R"({"hooks": {"Stop": [{"hooks": [{"type": "command"}]}]}})",
                     "needs a \"command\" string"},
                 row{R"({"hooks": {"Stop": [{"hooks": [{"command": "x", "timeout": -1}]}]}})",
                     "timeout"},
                 row{R"({"hooks": {"Stop": [{"hooks": [{"command": "x", "timeout": 0}]}]}})",
                     "seconds above 0, at most 86400"},
                 row{R"({"hooks": {"PreToolUse": [{"matcher": "(", "hooks": []}]}})",
                     "is not a regular expression"},
                 row{R"({"hooks": {"PreToolUse": [{"matcher": 5, "hooks": []}]}})",
                     "must be a string"},
                 row{R"({"hooks": {"Stop": [{"hooks": [{"type": 5, "command": "x"}]}]}})",
                     "must be a string"}}) {
    CAPTURE(r.settings);
    auto parsed = parse_hook_settings(json::parse(r.settings), "/x/settings.json");
    REQUIRE_FALSE(parsed);
    CHECK(parsed.error().find("/x/settings.json") != std::string::npos);
    CHECK(parsed.error().find(r.says) != std::string::npos);
  }
}

TEST_CASE("a matcher is a tool name or a regular expression, troupe's names or Claude Code's") {
  CHECK(hook_matches("", "shell"));
  CHECK(hook_matches("*", "grep"));
  CHECK(hook_matches("shell", "shell"));
  CHECK(hook_matches("Bash", "shell"));
  CHECK(hook_matches("Write|Edit", "edit"));
  CHECK(hook_matches("wr.*", "write"));
  CHECK_FALSE(hook_matches("shell", "shellfish"));
  CHECK_FALSE(hook_matches("Read", "shell"));
  // Claude Code's own matchers: alternations, and MCP tools troupe does not have.
  CHECK(hook_matches("Bash|Edit", "shell"));
  CHECK(hook_matches("Bash|Edit", "edit"));
  CHECK_FALSE(hook_matches("Bash|Edit", "write"));
  CHECK(hook_matches("Edit|MultiEdit|Write", "patch"));
  CHECK_FALSE(hook_matches("mcp__.*", "shell"));
  CHECK_FALSE(hook_matches("mcp__github__.*", "task"));
  CHECK(hook_matches(".*", "task_wait"));
  CHECK_FALSE(hook_matches("(", "shell")); // refused when the settings are read; never a crash
}

TEST_CASE("Claude Code's matchers are accepted in settings, a broken one is refused") {
  for (auto matcher : {"Bash|Edit", "mcp__.*", "Notebook.*", "Write|Edit|MultiEdit"}) {
    CAPTURE(matcher);
    auto settings = json{{"hooks", {{"PreToolUse", json::array({{{"matcher", matcher},
                                                                 {"hooks", json::array({{{"command", "x"}}})}}})}}}};
    CHECK(parse_hook_settings(settings, "s.json"));
  }
  auto broken = json{{"hooks", {{"PreToolUse", json::array({{{"matcher", "Bash("},
                                                             {"hooks", json::array({{{"command", "x"}}})}}})}}}};
  auto parsed = parse_hook_settings(broken, "s.json");
  REQUIRE_FALSE(parsed);
  CHECK(parsed.error().find("is not a regular expression") != std::string::npos);
}

TEST_CASE("PreToolUse decisions in both spellings: deny over ask over allow, and the rest") {
  auto decide = [](std::vector<hook_process_result> results) {
    return combine_hook_results(hook_event::pre_tool_use, results);
  };
  auto allow = decide({ran(0, R"({"hookSpecificOutput":{"hookEventName":"PreToolUse",)"
                              R"("permissionDecision":"allow","permissionDecisionReason":"ok"}})")});
  CHECK(allow.permission == hook_permission::allow);
  CHECK(allow.permission_reason == "ok");
  CHECK_FALSE(allow.blocked);
  CHECK(decide({ran(0, R"({"decision":"approve"})")}).permission == hook_permission::allow);
  auto ask = decide({ran(0, R"({"hookSpecificOutput":{"permissionDecision":"allow"}})"),
                     ran(0, R"({"hookSpecificOutput":{"permissionDecision":"ask",)"
                            R"("permissionDecisionReason":"look first"}})")});
  CHECK(ask.permission == hook_permission::ask);
  CHECK(ask.permission_reason == "look first");
  auto deny = decide({ran(0, R"({"hookSpecificOutput":{"permissionDecision":"ask"}})"),
                      ran(2, "", "no\n")});
  CHECK(deny.permission == hook_permission::deny);
  CHECK(deny.blocked);
  CHECK(deny.reason == "no");
  CHECK(decide({ran(0, R"({"hookSpecificOutput":{"permissionDecision":"maybe"}})")}).permission ==
        hook_permission::none);

  auto updated = decide({ran(0, R"({"hookSpecificOutput":{"updatedInput":{"command":"ls"}}})"),
                         ran(0, R"({"hookSpecificOutput":{"updatedInput":{"command":"pwd"}}})"),
                         ran(0, R"({"hookSpecificOutput":{"updatedInput":"not an object"}})")});
  CHECK(updated.updated_input == json{{"command", "pwd"}});
  CHECK(combine_hook_results(hook_event::post_tool_use,
                             {ran(0, R"({"hookSpecificOutput":{"updatedInput":{"a":1}}})")})
          .updated_input.is_null());

  std::vector<std::string> outcomes;
  std::vector<bool> quiet;
  auto stop = combine_hook_results(
    hook_event::stop,
    {ran(0, R"({"continue":false,"stopReason":"enough","systemMessage":"bye","suppressOutput":true})"),
     ran(0, R"({"continue":true,"systemMessage":"hello"})"), ran(0, R"({"continue":"no"})")},
    &outcomes, &quiet);
  CHECK(stop.stop);
  CHECK(stop.stop_reason == "enough");
  CHECK(stop.system_messages == std::vector<std::string>{"bye", "hello"});
  CHECK(outcomes == std::vector<std::string>{"stopped", "success", "success"});
  CHECK(quiet == std::vector<bool>{true, false, false});
}

TEST_CASE("hook answers combine: exit 2 and decisions block, context and messages add up") {
  std::vector<std::string> outcomes;
  auto o = combine_hook_results(
    hook_event::pre_tool_use,
    {ran(2, "", "no rm -rf\n"), ran(0, R"({"decision":"block","reason":"not on main"})"),
     ran(0, R"({"additionalContext":"one","hookSpecificOutput":{"additionalContext":"two"}})"),
     ran(1, "", "crashed"), ran(0, "not json")},
    &outcomes);
  CHECK(o.blocked);
  CHECK(o.reason == "no rm -rf\nnot on main");
  CHECK(o.additional_context == "one\ntwo");
  CHECK(o.ran == 5);
  CHECK(outcomes == std::vector<std::string>{"blocked", "blocked", "success", "error", "success"});

  auto quiet = combine_hook_results(hook_event::stop, {ran(1, R"({"decision":"block"})")});
  CHECK_FALSE(quiet.blocked); // another non-zero exit is logged and ignored

  hook_process_result slow;
  slow.timed_out = true;
  slow.exit_code = 137;
  std::vector<std::string> timed;
  CHECK_FALSE(combine_hook_results(hook_event::stop, {slow}, &timed).blocked);
  CHECK(timed == std::vector<std::string>{"timeout"});

  auto messages = combine_hook_results(
    hook_event::loop_continue,
    {ran(0, R"({"messages":["run the linter", {"content":"then commit"}]})")});
  CHECK(messages.messages == std::vector<std::string>{"run the linter", "then commit"});

  // Plain stdout is context for the two events that add it to the prompt, and nothing else.
  CHECK(combine_hook_results(hook_event::session_start, {ran(0, "branch: main\n")})
          .additional_context == "branch: main");
  CHECK(combine_hook_results(hook_event::post_tool_use, {ran(0, "chatter\n")})
          .additional_context.empty());
  CHECK(combine_hook_results(hook_event::stop, {ran(2, "")}).reason == "blocked by a Stop hook");
}

TEST_CASE("Claude Code's permissionDecision form blocks, and fields of the wrong type are no answer") {
  auto deny = combine_hook_results(
    hook_event::pre_tool_use,
    {ran(0, R"({"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny",)"
            R"("permissionDecisionReason":"not in CI"}})")});
  CHECK(deny.blocked);
  CHECK(deny.reason == "not in CI");
  CHECK_FALSE(combine_hook_results(
                hook_event::pre_tool_use,
                {ran(0, R"({"hookSpecificOutput":{"permissionDecision":"allow"}})")})
                .blocked);
  for (auto odd : {R"({"decision":"block","reason":42})", R"({"decision":true})",
                   R"({"decision":null})", R"({"additionalContext":["a"]})",
                   R"({"hookSpecificOutput":{"permissionDecision":1}})"}) {
    CAPTURE(odd);
    auto o = combine_hook_results(hook_event::stop, {ran(0, odd)}); // must not throw
    CHECK(o.additional_context.empty());
  }
  CHECK(combine_hook_results(hook_event::stop, {ran(0, R"({"decision":"block","reason":42})")})
          .reason == "blocked by a Stop hook");
}
