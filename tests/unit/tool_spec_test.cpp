// The tool spec's input check: what the model reads when its arguments do not fit.

#include <doctest/doctest.h>

#include "tools/shell.hpp"
#include "tools/task_output.hpp"
#include "tools/task_wait.hpp"
#include "tools/tool_spec.hpp"

using namespace troupe;
using nlohmann::json;

TEST_CASE("arguments kept as text say why they are not an object, and are shown cut short") {
  auto shell = shell_tool();
  // What providers keep of arguments nested 100,000 deep: their text (providers/wire.cpp).
  auto deep = std::string(100000, '[') + std::string(100000, ']');
  auto problem = validate_input(shell, json(deep));
  REQUIRE(problem);
  CHECK(problem->rfind("input of tool 'shell' must be a JSON object (JSON nested deeper than 512 "
                       "levels), got \"[[[",
                       0) == 0);
  CHECK(problem->size() < 400);
  CHECK(problem->find("199802 more bytes") != std::string::npos);
  auto not_json = validate_input(shell, json("ls -la"));
  REQUIRE(not_json);
  CHECK(*not_json == "input of tool 'shell' must be a JSON object (not valid JSON), got \"ls -la\"");
  auto array = validate_input(shell, json::array({1}));
  REQUIRE(array);
  CHECK(*array == "input of tool 'shell' must be a JSON object, got [1]");
  auto wrong_type = validate_input(shell, json{{"command", json::array({std::string(500, 'x')})}});
  REQUIRE(wrong_type);
  CHECK(wrong_type->size() < 400);
}

TEST_CASE("a number's bounds hold for fractions and huge values, not only for integers") {
  for (const auto& spec : {task_wait_tool(), task_output_tool()}) {
    CAPTURE(spec.name);
    auto with_timeout = [&](json timeout) {
      json input = {{"timeout", timeout}};
      if (spec.name == "task_output")
        input["task_id"] = "task_1";
      return validate_input(spec, input);
    };
    auto huge = with_timeout(1e308);
    REQUIRE(huge);
    CHECK(huge->find("must be at most 600") != std::string::npos);
    auto negative = with_timeout(-0.5);
    REQUIRE(negative);
    CHECK(negative->find("must be at least 0") != std::string::npos);
    CHECK(with_timeout(-1));
    CHECK(!with_timeout(2.5));
    CHECK(!with_timeout(600));
  }
}

TEST_CASE("an MCP server's malformed schema is read, never trusted: no throw, no false refusal") {
  tool_spec spec;
  spec.name = "mcp__x__t";
  spec.kind = tool_kind::mcp;
  for (auto schema : {json::parse(R"({"type": "object", "required": [1, null, {"a": 1}]})"),
                      json::parse(R"({"type": "object", "required": "a"})"),
                      json::parse(R"({"type": "object", "required": {"a": "b"}})"),
                      json::parse(R"({"type": "object", "properties": [1, 2]})"),
                      json::parse(R"({"type": "object", "properties": {"a": true}})"),
                      json::parse(R"([1, 2])"), json::parse(R"("schema")")}) {
    spec.input_schema = schema;
    CHECK_NOTHROW(validate_input(spec, json{{"a", 1}}));
    CHECK_FALSE(validate_input(spec, json{{"a", 1}}));
  }
  spec.input_schema = json::parse(R"({"type": "object", "required": ["a", 7],
                                      "properties": {"a": {"type": "string"}}})");
  CHECK(*validate_input(spec, json::object()) == "tool 'mcp__x__t' needs the argument 'a'");
  CHECK(*validate_input(spec, json{{"a", 1}}) ==
        "argument 'a' of tool 'mcp__x__t' must be of type string, got 1");
  // JSON Schema allows arguments it does not name unless additionalProperties is false.
  CHECK_FALSE(validate_input(spec, json{{"a", "x"}, {"extra", 1}}));
  spec.input_schema["additionalProperties"] = false;
  CHECK(*validate_input(spec, json{{"a", "x"}, {"extra", 1}}) ==
        "tool 'mcp__x__t' has no argument 'extra'");
  // troupe's own tools keep refusing what they do not name.
  CHECK(validate_input(shell_tool(), json{{"command", "ls"}, {"extra", 1}}));
}
