// The defaults README.md states that no test can wait for through the binary (minutes-long time
// limits), each tested through the shipped configuration: the flags as the CLI registers them.

#include <doctest/doctest.h>

#include <CLI/CLI.hpp>

#include "orchestrator/model_flags.hpp"
#include "orchestrator/run_flags.hpp"
#include "tools/shell.hpp"

using namespace troupe;

namespace {

/// `troupe run go`'s flags as the CLI parses them: none of the HTTP flags given.
run_flags parsed_without_flags() {
  CLI::App app;
  run_flags flags;
  add_agent_flags(app, flags, true);
  app.parse("go");
  return flags;
}

/// The HTTP client's configuration for an API model run without any HTTP flag (ollama/ needs
/// no key; it is the same engine and the same settings as openai/ and anthropic/).
http_model_config shipped_http_config() {
  auto choice = resolve_model_spec("ollama/test-model", parsed_without_flags());
  REQUIRE_MESSAGE(static_cast<bool>(choice), (choice ? std::string{} : choice.error()));
  REQUIRE(choice->http_model.has_value());
  return *choice->http_model;
}

} // namespace

TEST_CASE("by default a model reply silent for 120 s fails (--stream-idle-timeout)") {
  CHECK(shipped_http_config().idle_timeout_ms == 120000);
}

TEST_CASE("by default a model reply not complete 600 s after its request fails (--request-timeout)") {
  CHECK(shipped_http_config().request_timeout_ms == 600000);
}

TEST_CASE("by default a model reply must bring 32 B/s in each idle-timeout stretch (--min-transfer-rate)") {
  CHECK(shipped_http_config().min_bytes_per_second == 32);
}

TEST_CASE("by default a failed API request is retried 8 times (--max-retries)") {
  CHECK(shipped_http_config().max_retries == 8);
}

TEST_CASE("by default a shell command is killed after 120 s") {
  // run_command.cpp builds the sessions' tool_context (the parent's and each subagent's) without
  // setting shell_timeout: the struct's default is the shipped one.
  CHECK(shell_timeout(nlohmann::json::object(), tool_context{}) == std::chrono::seconds{120});
  CHECK(shell_timeout({{"timeout", 5}}, tool_context{}) == std::chrono::seconds{5});
}
