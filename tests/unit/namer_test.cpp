#include <doctest/doctest.h>

#include "actors/namer.hpp"
#include "context/token_budget.hpp"

using namespace troupe;

TEST_CASE("a prompt's first words name a session, deterministically") {
  CHECK(name_from_prompt("Fix the failing parser tests, then update the README please") ==
        "fix the failing parser tests then");
  CHECK(name_from_prompt("  refactor src/net.cpp: split `connect()`!") ==
        "refactor src/net.cpp split connect");
  // Only ASCII letters are lower-cased; other characters are kept as they are.
  CHECK(name_from_prompt("Überprüfe die Größe") == "Überprüfe die größe");
  CHECK(name_from_prompt("???") == "");
  CHECK(name_from_prompt(std::string(200, 'a')).empty()); // one word longer than a name
}

TEST_CASE("a model's answer is cleaned into a name") {
  CHECK(clean_name("\"Parser Test Fixes\"") == "Parser Test Fixes");
  CHECK(clean_name("Title: **Add retry logic to HTTP engine**.\nExtra line") ==
        "Add retry logic to HTTP engine");
  CHECK(clean_name("one two three four five six seven eight") == "one two three four five six");
  CHECK(clean_name("") == "");
}

TEST_CASE("the price table prices usage by model, and knows what it does not know") {
  token_usage usage;
  usage.input_tokens = 2000000;
  usage.output_tokens = 1000000;
  usage.cache_read_tokens = 1000000;
  CHECK(*cost_usd("anthropic/claude-sonnet-4-5", usage) == doctest::Approx(6 + 15 + 0.3));
  CHECK(*cost_usd("openai/gpt-4.1-mini", usage) == doctest::Approx(0.8 + 1.6 + 0.1));
  CHECK(*cost_usd("openai/gpt-4.1", usage) == doctest::Approx(4 + 8 + 0.5));
  CHECK(*cost_usd("scripted:/x.jsonl", usage) == 0);
  CHECK(*cost_usd("ollama/llama3.1", usage) == 0);
  CHECK_FALSE(cost_usd("openai/some-future-model", usage).has_value());
}
