// Context management against the fake model server: auto, reactive and manual compaction, the
// circuit breaker, max-output recovery and resuming from the boundary.

#include <doctest/doctest.h>

#include "support/provider_run.hpp"

using namespace troupe::test;
using nlohmann::json;

namespace {

bool is_compaction(const json& request) {
  return request["body"].dump().find("You summarise the conversation") != std::string::npos;
}

bool sends(const json& request, const std::string& text) {
  return request["body"].dump().find(text) != std::string::npos;
}

size_t count_compactions(const std::vector<json>& requests) {
  size_t n = 0;
  for (auto& r : requests)
    n += is_compaction(r) ? 1 : 0;
  return n;
}

// A reply that runs a command printing 70 distinct lines (~210 tokens): small enough never to
// be elided, so only a compaction can keep the context in the window.
json output_step(int i) {
  char command[64];
  std::snprintf(command, sizeof command, "seq -f 'out-%02d-%%04g' 1 70", i);
  return {{"text", "Progress note " + std::to_string(i) + "."},
          {"tool_calls", json::array({{{"name", "shell"}, {"input", {{"command", command}}}}})}};
}

} // namespace

TEST_CASE("tool outputs that overflow a small window are compacted and the run completes") {
  for (std::string provider : {"openai", "anthropic"}) {
    CAPTURE(provider);
    auto script = json::array();
    for (int i = 0; i < 14; ++i)
      script.push_back(output_step(i));
    script.push_back({{"text", "done"}});
    fake_server server{script.dump()};
    provider_run run{provider};
    auto r = run.run(server, {"--context-window", "4400", "count things"});
    CHECK(r.exit_code == 0);
    CHECK(result_of(r)["result"] == "done");
    auto boundaries = of_type(r, "system", "compact_boundary");
    REQUIRE(!boundaries.empty());
    auto meta = boundaries[0]["compact_metadata"];
    CHECK(meta["trigger"] == "auto");
    CHECK(meta["reactive"] == false);
    CHECK(meta["pre_tokens"].get<int64_t>() > 2600); // past the compaction threshold
    CHECK(meta["post_tokens"].get<int64_t>() < meta["pre_tokens"].get<int64_t>());
    // The compaction request carries the old outputs and no tools; the request after it
    // carries the summary instead of them.
    auto requests = server.requests();
    size_t at = 0;
    while (at < requests.size() && !is_compaction(requests[at]))
      ++at;
    REQUIRE(at + 1 < requests.size());
    CHECK(sends(requests[at], "out-00-0001"));
    CHECK(!requests[at]["body"].contains("tools"));
    CHECK(sends(requests[at + 1], "Summary of the earlier part"));
    CHECK(sends(requests[at + 1], boundaries[0]["summary"].get<std::string>()));
    CHECK(!sends(requests[at + 1], "out-00-0001"));
    // The transcript still holds every output, the compacted ones too, and the boundaries.
    // (Each compaction took one scripted entry as its summary, so that step never ran.)
    size_t logged_boundaries = 0;
    size_t outputs = 0;
    std::string all;
    for (auto& m : run.transcript()) {
      all += m.dump();
      logged_boundaries += m.value("origin", "") == "compact_boundary" ? 1 : 0;
      outputs += m["role"] == "tool" ? 1 : 0;
    }
    CHECK(logged_boundaries == boundaries.size());
    CHECK(outputs + count_compactions(requests) == 14);
    CHECK(all.find("out-00-0070") != std::string::npos);
  }
}

TEST_CASE("a prompt-too-long answer triggers exactly one reactive compaction and a retry") {
  for (std::string provider : {"openai", "anthropic"}) {
    CAPTURE(provider);
    fake_server server{R"([
      {"tool_calls": [{"name": "shell", "input": {"command": "echo first-output"}}]},
      {"prompt_too_long": true},
      {"text": "SUMMARY: echo ran and printed first-output."},
      {"text": "finished"}])"};
    provider_run run{provider};
    auto r = run.run(server, {"go"});
    CHECK(r.exit_code == 0);
    auto result = result_of(r);
    CHECK(result["result"] == "finished");
    CHECK(result["num_steps"] == 2); // the refused step ran again, it did not count twice
    auto boundaries = of_type(r, "system", "compact_boundary");
    REQUIRE(boundaries.size() == 1);
    CHECK(boundaries[0]["compact_metadata"]["reactive"] == true);
    auto requests = server.requests();
    REQUIRE(requests.size() == 4);
    CHECK(count_compactions(requests) == 1);
    CHECK(is_compaction(requests[2]));
    CHECK(sends(requests[3], "SUMMARY: echo ran"));
  }
}

TEST_CASE("a second prompt-too-long after the reactive compaction ends the run with an error") {
  fake_server server{R"([
    {"prompt_too_long": true},
    {"text": "SUMMARY"},
    {"prompt_too_long": true}])"};
  provider_run run;
  auto r = run.run(server, {"go"});
  CHECK(r.exit_code == 1);
  auto result = result_of(r);
  CHECK(result["terminal_reason"] == "error");
  CHECK(result["error_kind"] == "prompt_too_long");
  CHECK(result["error"].get<std::string>().find("still too long") != std::string::npos);
  CHECK(count_compactions(server.requests()) == 1);
}

TEST_CASE("three failed compactions trip the breaker, the loop goes on until the provider refuses") {
  // A prompt past the threshold of a 4000-token window: every step wants a compaction.
  std::string prompt(12000, 'x');
  fake_server server{R"([
    {"status": 400, "error_message": "summariser unavailable"},
    {"tool_calls": [{"name": "shell", "input": {"command": "echo 1"}}]},
    {"status": 400, "error_message": "summariser unavailable"},
    {"tool_calls": [{"name": "shell", "input": {"command": "echo 2"}}]},
    {"status": 400, "error_message": "summariser unavailable"},
    {"tool_calls": [{"name": "shell", "input": {"command": "echo 3"}}]},
    {"tool_calls": [{"name": "shell", "input": {"command": "echo 4"}}]},
    {"prompt_too_long": true}])"};
  provider_run run;
  auto r = run.run(server, {"--context-window", "4000", prompt});
  CHECK(of_type(r, "system", "compact_failed").size() == 3);
  auto disabled = of_type(r, "system", "compact_disabled");
  REQUIRE(disabled.size() == 1);
  CHECK(disabled[0]["message"].get<std::string>().find("auto-compaction is off") !=
        std::string::npos);
  CHECK(of_type(r, "system", "compact_boundary").empty());
  auto requests = server.requests();
  CHECK(requests.size() == 8); // the fourth step went out without a compaction before it
  CHECK(count_compactions(requests) == 3);
  CHECK(r.exit_code == 1);
  auto result = result_of(r);
  CHECK(result["error_kind"] == "prompt_too_long");
  CHECK(result["error"].get<std::string>().find("auto-compaction is off") != std::string::npos);
  CHECK(result["num_steps"] == 5);
}

TEST_CASE("a reply cut at max output tokens mid-text is continued and joined") {
  for (std::string provider : {"openai", "anthropic"}) {
    CAPTURE(provider);
    fake_server server{R"([
      {"text": "The answer is forty", "stop_reason": "max_tokens"},
      {"text": "-two."}])"};
    provider_run run{provider};
    auto r = run.run(server, {"what is it"});
    CHECK(r.exit_code == 0);
    CHECK(result_of(r)["result"] == "The answer is forty-two.");
    auto log = run.transcript();
    REQUIRE(log.size() == 2); // the prompt and one joined assistant message
    CHECK(log[1]["content"] == "The answer is forty-two.");
    auto requests = server.requests();
    REQUIRE(requests.size() == 2);
    CHECK(sends(requests[1], "The answer is forty"));
    CHECK(sends(requests[1], "cut off because it reached the output token limit"));
  }
}

TEST_CASE("a tool call cut at max output tokens is completed, never run half-formed") {
  for (std::string provider : {"openai", "anthropic"}) {
    CAPTURE(provider);
    fake_server server{R"([
      {"text": "Running it.", "stop_reason": "max_tokens",
       "tool_calls": [{"name": "shell", "raw_arguments": "{\"command\": \"echo hal"}]},
      {"tool_calls": [{"name": "shell", "input": {"command": "echo whole"}}]},
      {"text": "done"}])"};
    provider_run run{provider};
    auto r = run.run(server, {"run it"});
    CHECK(r.exit_code == 0);
    auto log = run.transcript();
    REQUIRE(log.size() == 4);
    CHECK(log[1]["content"] == "Running it.");
    REQUIRE(log[1]["tool_calls"].size() == 1);
    CHECK(log[1]["tool_calls"][0]["input"]["command"] == "echo whole");
    CHECK(log[2]["content"] == "whole\n");
    auto requests = server.requests();
    REQUIRE(requests.size() == 3);
    CHECK(sends(requests[1], "was cut before its input was complete and was not run"));
    CHECK(!sends(requests[1], "echo hal"));
  }
}

TEST_CASE("/compact from the queue, then a resume sends only what follows the boundary") {
  fake_server server{R"([
    {"tool_calls": [{"name": "shell", "input": {"command": "echo OLD-MARKER"}}]},
    {"text": "first answer"},
    {"text": "SUMMARY-TEXT: echo printed a marker."},
    {"text": "second answer"}])"};
  provider_run run;
  auto first = run.run(server, {"--session-id", "ctx-resume", "first question"});
  REQUIRE(first.exit_code == 0);
  auto compacted = run.run(server, {"--session-id", "ctx-resume", "/compact keep the marker"});
  REQUIRE(compacted.exit_code == 0);
  auto boundaries = of_type(compacted, "system", "compact_boundary");
  REQUIRE(boundaries.size() == 1);
  CHECK(boundaries[0]["compact_metadata"]["trigger"] == "manual");
  CHECK(boundaries[0]["compact_metadata"]["instructions"] == "keep the marker");
  auto requests = server.requests();
  REQUIRE(requests.size() == 3);
  CHECK(is_compaction(requests[2]));
  CHECK(sends(requests[2], "keep the marker"));
  CHECK(sends(requests[2], "OLD-MARKER"));

  auto resumed = run.run(server, {"--session-id", "ctx-resume", "second question"});
  CHECK(resumed.exit_code == 0);
  CHECK(result_of(resumed)["result"] == "second answer");
  requests = server.requests();
  REQUIRE(requests.size() == 4);
  CHECK(sends(requests[3], "SUMMARY-TEXT"));
  CHECK(sends(requests[3], "second question"));
  CHECK(!sends(requests[3], "OLD-MARKER"));
  CHECK(!sends(requests[3], "first question"));
  // Every message ever written is still in the transcript.
  std::string all;
  for (auto& m : run.transcript())
    all += m.dump();
  for (auto text : {"first question", "OLD-MARKER", "first answer", "SUMMARY-TEXT",
                    "second question", "second answer"})
    CHECK(all.find(text) != std::string::npos);
}

TEST_CASE("context window flags and settings are checked") {
  fake_server server{"[]"};
  provider_run run;
  auto r = run.run(server, {"--context-window", "10", "go"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("invalid --context-window '10'") != std::string::npos);
  write_file(run.dir / "settings.json", R"({"contextWindow": "big"})");
  r = run.run(server, {"--settings", (run.dir / "settings.json").string(), "go"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("\"contextWindow\" must be a whole number of tokens") != std::string::npos);
  CHECK(server.requests().empty());
}
