#include <doctest/doctest.h>

#include "providers/scripted_script.hpp"
#include "support/test_support.hpp"

using namespace troupe;

TEST_CASE("a script parses text, tool calls, stop reasons, errors and delays") {
  auto parsed = parse_script(
    "{\"text\": \"hi\", \"tool_calls\": [{\"name\": \"shell\", \"input\": {\"command\": \"ls\"}}]}\n"
    "\n"
    "{\"text\": \"cut\", \"stop_reason\": \"max_tokens\", \"delay_ms\": 5}\n"
    "{\"error\": {\"status\": 503, \"message\": \"overloaded\"}}\n",
    "s.jsonl");
  REQUIRE(parsed);
  REQUIRE(parsed->replies.size() == 3);
  CHECK(parsed->replies[0].tool_calls[0].name == "shell");
  CHECK(parsed->replies[0].tool_calls[0].input["command"] == "ls");
  CHECK(parsed->replies[1].line == 3);
  CHECK(parsed->replies[1].stop_reason == "max_tokens");
  CHECK(parsed->replies[1].delay_ms == 5);
  auto reply = to_model_reply(parsed->replies[2]);
  CHECK(reply.error == model_error_kind::server);
  CHECK(reply.error_status == 503);
  CHECK(reply.error_message == "overloaded");
}

TEST_CASE("an invalid script line is reported with its number") {
  auto bad_json = parse_script("{\"text\": \"a\"}\n{\"text\": oops}\n", "s.jsonl");
  REQUIRE_FALSE(bad_json);
  CHECK(bad_json.error() == "s.jsonl line 2: not valid JSON; each line must be one JSON object");
  auto unknown = parse_script("{\"txt\": \"a\"}\n", "s.jsonl");
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().rfind("s.jsonl line 1: unknown key 'txt'", 0) == 0);
  CHECK_FALSE(parse_script("{\"tool_calls\": [{\"input\": {}}]}", "s"));
  CHECK_FALSE(parse_script("{\"delay_ms\": -1}", "s"));
  CHECK_FALSE(parse_script("[1, 2]", "s"));
  auto empty = parse_script("\n\n", "s.jsonl");
  REQUIRE_FALSE(empty);
  CHECK(empty.error().find("holds no replies") != std::string::npos);
}

TEST_CASE("a missing script file is a clear error") {
  auto missing = load_script("/nonexistent/script.jsonl");
  REQUIRE_FALSE(missing);
  CHECK(missing.error() == "cannot read script /nonexistent/script.jsonl: no such file");
}

TEST_CASE("statuses map to provider error kinds") {
  CHECK(error_kind_for_status(429) == model_error_kind::rate_limited);
  CHECK(error_kind_for_status(529) == model_error_kind::server);
  CHECK(error_kind_for_status(401) == model_error_kind::request);
  CHECK(error_kind_for_status(413) == model_error_kind::prompt_too_long);
}

TEST_CASE("a script line nested 100,000 deep is refused with its number, never parsed into a tree") {
  auto deep = "{\"text\": \"a\"}\n{\"tool_calls\": [{\"name\": \"shell\", \"input\": " +
              std::string(100000, '[') + std::string(100000, ']') + "}]}\n";
  auto parsed = parse_script(deep, "s.jsonl");
  REQUIRE_FALSE(parsed);
  CHECK(parsed.error() ==
        "s.jsonl line 2: JSON nested deeper than 512 levels; each line must be one JSON object");
}
