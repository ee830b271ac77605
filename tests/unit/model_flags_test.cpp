#include <doctest/doctest.h>

#include "orchestrator/model_flags.hpp"

using namespace troupe;

TEST_CASE("a model named without its provider gets the one its name says") {
  struct row {
    const char* given;
    const char* spec;
  };
  for (auto r : {row{"sonnet", "anthropic/claude-sonnet-4-5"},
                 row{"opus", "anthropic/claude-opus-4-5"},
                 row{"haiku", "anthropic/claude-haiku-4-5"},
                 row{"claude-3-5-haiku-latest", "anthropic/claude-3-5-haiku-latest"},
                 row{"gpt-4.1", "openai/gpt-4.1"},
                 row{"chatgpt-4o-latest", "openai/chatgpt-4o-latest"},
                 row{"o1", "openai/o1"},
                 row{"o3-mini", "openai/o3-mini"},
                 row{"o4-mini", "openai/o4-mini"},
                 // With a provider, or a script: as given.
                 row{"ollama/llama3", "ollama/llama3"},
                 row{"openai/sonnet", "openai/sonnet"},
                 row{"scripted:replies.jsonl", "scripted:replies.jsonl"}}) {
    CAPTURE(r.given);
    auto spec = qualified_model_spec(r.given);
    REQUIRE(spec);
    CHECK(*spec == r.spec);
  }
  for (auto* unknown : {"llama3", "Sonnet", "gemini-2.5-pro", "o2", ""}) {
    CAPTURE(unknown);
    auto spec = qualified_model_spec(unknown);
    REQUIRE_FALSE(spec);
    CHECK(spec.error().find("unknown model '" + std::string{unknown} + "'") == 0);
    CHECK(spec.error().find("claude-*, sonnet, opus and haiku") != std::string::npos);
  }
}
