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
