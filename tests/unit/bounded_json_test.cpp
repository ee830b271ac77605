// JSON from outside is parsed with a bound on its nesting depth (protocol/bounded_json).

#include <doctest/doctest.h>

#include "protocol/bounded_json.hpp"

using namespace troupe;
using nlohmann::json;

namespace {

std::string nested_arrays(size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

} // namespace

TEST_CASE("json_nesting_depth counts brackets outside strings only") {
  CHECK(json_nesting_depth("", 10) == 0);
  CHECK(json_nesting_depth("42", 10) == 0);
  CHECK(json_nesting_depth("[]", 10) == 1);
  CHECK(json_nesting_depth(R"({"a": [1, {"b": []}], "c": {}})", 10) == 4);
  CHECK(json_nesting_depth(R"(["[[[[{{{{", "]]]"])", 10) == 1);
  CHECK(json_nesting_depth(R"(["a \"[[[[\" b", [1]])", 10) == 2);
  CHECK(json_nesting_depth(R"(["a \\", [[1]]])", 10) == 3); // the escaped backslash ends it
  CHECK(json_nesting_depth("]]]][[", 10) == 2);
  // The scan stops as soon as it passes the limit.
  CHECK(json_nesting_depth(nested_arrays(100000), 512) == 513);
}

TEST_CASE("parse_json_bounded takes max_json_depth levels and refuses one more before parsing") {
  CHECK(max_json_depth == 512);
  auto deepest = parse_json_bounded(nested_arrays(512));
  REQUIRE(deepest);
  CHECK(deepest->is_array());
  auto too_deep = parse_json_bounded(nested_arrays(513));
  REQUIRE_FALSE(too_deep);
  CHECK(too_deep.error() == "JSON nested deeper than 512 levels");
  // 100,000 levels: refused before nlohmann builds a tree whose copy would overflow the stack.
  auto hostile = parse_json_bounded(R"({"tool": )" + std::string(100000, '{') + "}");
  REQUIRE_FALSE(hostile);
  CHECK(hostile.error() == "JSON nested deeper than 512 levels");
  auto own_limit = parse_json_bounded(nested_arrays(3), 2);
  REQUIRE_FALSE(own_limit);
  CHECK(own_limit.error() == "JSON nested deeper than 2 levels");
}

TEST_CASE("parse_json_bounded parses ordinary JSON and names text that is not JSON") {
  auto parsed = parse_json_bounded(R"({"command": "echo [{", "n": [1, 2]})");
  REQUIRE(parsed);
  CHECK(*parsed == json{{"command", "echo [{"}, {"n", {1, 2}}});
  for (const char* bad : {"", "{", "{\"a\": }", "[1]]", "nul"}) {
    CAPTURE(bad);
    auto failed = parse_json_bounded(bad);
    REQUIRE_FALSE(failed);
    CHECK(failed.error() == invalid_json_message);
  }
}
