// JSON nested 100,000 deep from a provider or a script: a clear error, never a crash.

#include <doctest/doctest.h>

#include "support/cli_fixture.hpp"
#include "support/provider_run.hpp"

using namespace troupe::test;
using nlohmann::json;

namespace {

std::string deep_arrays() { return std::string(100000, '[') + std::string(100000, ']'); }

// An object, as arguments should be, whose one value nests 100,000 deep.
std::string deep_arguments() { return "{\"command\": " + deep_arrays() + "}"; }

} // namespace

TEST_CASE("tool-call arguments nested 100,000 deep are an error result and the turn goes on") {
  for (std::string provider : {"openai", "anthropic"}) {
    CAPTURE(provider);
    json replies = json::array(
      {{{"text", "Running."},
        {"tool_calls", {{{"name", "shell"}, {"raw_arguments", deep_arguments()}}}}},
       {{"text", "The arguments were refused."}}});
    fake_server server{replies.dump()};
    provider_run run{provider};
    auto r = run.run(server, {"go"});
    CHECK(r.exit_code == 0);
    auto result = result_of(r);
    CHECK(result["subtype"] == "success");
    CHECK(result["result"] == "The arguments were refused.");
    auto tool = of_type(r, "user");
    REQUIRE(tool.size() == 2);
    auto& answer = tool[1]["message"]["content"][0];
    CHECK(answer["is_error"] == true);
    CHECK(answer["content"].get<std::string>().rfind(
            "input of tool 'shell' must be a JSON object (JSON nested deeper than 512 levels)",
            0) == 0);
    // The model read the error (the second request carries it) and the log holds it.
    REQUIRE(server.requests().size() == 2);
    CHECK(server.requests()[1]["body"].dump().find("nested deeper than 512 levels") !=
          std::string::npos);
    CHECK(run.transcript().back()["content"] == "The arguments were refused.");
  }
}

TEST_CASE("a script line nested 100,000 deep is bad input: one line naming it, exit 2") {
  cli_fixture f;
  auto path = f.dir / "deep.jsonl";
  write_file(path, "{\"text\": \"fine\"}\n{\"tool_calls\": [{\"name\": \"shell\", \"input\": " +
                     deep_arrays() + "}]}\n");
  auto r = f.run({"--model", "scripted:" + path.string(), "go"});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err == "troupe: " + path.string() +
                   " line 2: JSON nested deeper than 512 levels; each line must be one JSON "
                   "object\n");
}
