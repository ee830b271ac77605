// The spellings of hook events (protocol/hook_event.cpp): the settings files' names.

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "protocol/hook_event.hpp"

using namespace troupe;
using nlohmann::json;

TEST_CASE("every hook event has the settings' spelling, which reads back as itself") {
  std::vector<std::string> names;
  for (auto event : all_hook_events) {
    std::string name = to_string(event);
    CAPTURE(name);
    names.push_back(name);
    auto parsed = parse_hook_event(name);
    REQUIRE(parsed);
    CHECK(*parsed == event);
    CHECK(json(event) == name);
    CHECK(json(name).get<hook_event>() == event);
  }
  CHECK(names == std::vector<std::string>{"SessionStart", "UserPromptSubmit", "StepPre",
                                          "PreToolUse", "PostToolUse", "GenerationPost", "Stop",
                                          "LoopContinue", "PreCompact", "SessionEnd"});
}

TEST_CASE("only the events around a tool call are tool events") {
  for (auto event : all_hook_events) {
    CAPTURE(to_string(event));
    CHECK(is_tool_event(event) ==
          (event == hook_event::pre_tool_use || event == hook_event::post_tool_use));
  }
}

TEST_CASE("an unknown hook event is an error that names it and the known ones") {
  for (const char* bad : {"", "BeforeAll", "pretooluse", "session.start", "Stop "}) {
    CAPTURE(bad);
    auto parsed = parse_hook_event(bad);
    REQUIRE(!parsed);
    CHECK(parsed.error() == std::string{"unknown hook event \""} + bad +
                              "\" (events: SessionStart, UserPromptSubmit, StepPre, PreToolUse, "
                              "PostToolUse, GenerationPost, Stop, LoopContinue, PreCompact, "
                              "SessionEnd)");
    CHECK_THROWS_AS(json(bad).get<hook_event>(), json::exception);
  }
}
