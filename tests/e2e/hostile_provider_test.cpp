// `troupe run` against a hostile or broken provider: endless and flooding streams, a huge line,
// a drip, a reset mid-stream, an unanswered request and bad Retry-After values. Each ends with a
// clear error and exit 1 (or a retry where one is due), keeps the transcript written before, and
// stays within its memory caps, measured as troupe's peak RSS (wait4's ru_maxrss, its VmHWM).

#include <doctest/doctest.h>

#include "support/provider_run.hpp"

using namespace troupe::test;
using nlohmann::json;

namespace {

// A tool call that runs (so the transcript holds more than the prompt), then the hostile reply.
std::string after_a_tool(const std::string& hostile) {
  return R"([{"text": "Checking.", "tool_calls": [{"name": "shell",
                                                     "input": {"command": "echo tool-ran"}}]}, )" +
         hostile + "]";
}

// The transcript of a run that failed on its second reply: prompt, tool call and result.
void check_kept(provider_run& run) {
  auto transcript = run.transcript();
  REQUIRE(transcript.size() == 3);
  CHECK(transcript[0]["role"] == "user");
  CHECK(transcript[1]["role"] == "assistant");
  CHECK(transcript[2]["content"] == "tool-ran\n");
}

std::string error_of(const process_result& r) {
  auto result = result_of(r);
  CHECK(result["subtype"] == "error_during_execution");
  return result.value("error", "");
}

// The peak RSS a run with 1 MiB caps may reach: troupe's own footprint (about 20 MiB against the
// fake server) with room to spare, and far below what the same streams cost without the caps.
#if defined(__SANITIZE_ADDRESS__)
// ASan's shadow memory and quarantine put its troupe near 300 MiB before any reply: the bound
// still fails a reply buffered whole (GiBs), not ASan's own overhead.
constexpr long bounded_rss_kib = 700 * 1024;
#else
constexpr long bounded_rss_kib = 100 * 1024;
#endif

process_options guarded() {
  process_options opts;
  opts.timeout = std::chrono::seconds{60}; // a hang guard only: each run ends in seconds
  return opts;
}

} // namespace

TEST_CASE("an endless stream flooding as fast as it can is cut at --max-reply-bytes") {
  for (std::string provider : {"openai", "anthropic"}) {
    CAPTURE(provider);
    fake_server server{after_a_tool(R"({"endless": true, "flood": true})")};
    provider_run run{provider};
    auto r = run.run(server, {"--max-reply-bytes", "1048576", "go"}, guarded());
    CHECK(r.exit_code == 1);
    auto error = error_of(r);
    CHECK(error.find(provider + ": the reply exceeded 1048576 bytes (--max-reply-bytes)") == 0);
    CHECK(r.max_rss_kib < bounded_rss_kib);
    check_kept(run);
  }
}

TEST_CASE("an endless JSON body (no stream) is cut at --max-reply-bytes") {
  fake_server server{after_a_tool(R"({"endless": true, "flood": true})")};
  provider_run run;
  auto r = run.run(server, {"--no-stream", "--max-reply-bytes", "1048576", "go"}, guarded());
  CHECK(r.exit_code == 1);
  CHECK(error_of(r).find("the reply exceeded 1048576 bytes") != std::string::npos);
  CHECK(r.max_rss_kib < bounded_rss_kib);
  check_kept(run);
}

TEST_CASE("one huge SSE line is rejected at --max-event-bytes, not accepted as a result") {
  for (std::string provider : {"openai", "anthropic"}) {
    CAPTURE(provider);
    fake_server server{after_a_tool(R"({"huge_line": 67108864})")};
    provider_run run{provider};
    auto r = run.run(server, {"--max-event-bytes", "1048576", "go"}, guarded());
    CHECK(r.exit_code == 1);
    auto error = error_of(r);
    CHECK(error.find(provider + ": a stream event exceeded 1048576 bytes (--max-event-bytes)") ==
          0);
    CHECK(error.find("; received: data: {") != std::string::npos);
    CHECK(r.max_rss_kib < bounded_rss_kib);
    check_kept(run);
  }
}

TEST_CASE("the default caps reject a 24 MiB line and a 80 MiB body") {
  {
    fake_server server{after_a_tool(R"({"huge_line": 25165824})")};
    provider_run run;
    auto r = run.run(server, {"go"}, guarded());
    CHECK(r.exit_code == 1);
    CHECK(error_of(r).find("a stream event exceeded 8388608 bytes") != std::string::npos);
  }
  {
    fake_server server{after_a_tool(R"({"huge_line": 83886080})")};
    provider_run run{"anthropic"};
    auto r = run.run(server, {"--no-stream", "go"}, guarded());
    CHECK(r.exit_code == 1);
    CHECK(error_of(r).find("the reply exceeded 67108864 bytes") != std::string::npos);
    check_kept(run);
  }
}

TEST_CASE("a stream dripping a byte at a time fails below --min-transfer-rate") {
  for (std::string provider : {"openai", "anthropic"}) {
    CAPTURE(provider);
    fake_server server{
        after_a_tool(R"({"text": "slowly", "drip": true, "drip_interval_ms": 200})")};
    provider_run run{provider};
    auto r = run.run(server, {"--stream-idle-timeout", "3", "--min-transfer-rate", "64", "go"},
                     guarded());
    CHECK(r.exit_code == 1);
    auto error = error_of(r);
    CHECK(error.find(provider + ": the reply is too slow: ") == 0);
    CHECK(error.find("bytes/s (--min-transfer-rate)") != std::string::npos);
    CHECK(error.find("; received: ") != std::string::npos);
    check_kept(run);
  }
}

TEST_CASE("a drip and an endless JSON body end at --request-timeout") {
  {
    fake_server server{
        after_a_tool(R"({"text": "slowly", "drip": true, "drip_interval_ms": 100})")};
    provider_run run{"anthropic"};
    auto r =
        run.run(server, {"--request-timeout", "2", "--min-transfer-rate", "0", "go"}, guarded());
    CHECK(r.exit_code == 1);
    CHECK(error_of(r).find("anthropic: no complete reply within 2 s (--request-timeout) (after ") ==
          0);
    check_kept(run);
  }
  {
    fake_server server{after_a_tool(R"({"endless": true})")};
    provider_run run;
    auto r = run.run(server, {"--no-stream", "--request-timeout", "2", "go"}, guarded());
    CHECK(r.exit_code == 1);
    CHECK(error_of(r).find("openai: no complete reply within 2 s") == 0);
    check_kept(run);
  }
}

TEST_CASE("an unanswered request fails after the idle timeout without streaming too") {
  fake_server server{after_a_tool(R"({"latency_ms": 60000})")};
  provider_run run;
  auto r = run.run(
      server, {"--no-stream", "--stream-idle-timeout", "1", "--max-retries", "0", "go"}, guarded());
  CHECK(r.exit_code == 1);
  CHECK(error_of(r) == "openai: the reply stalled: no data for 1 s (--stream-idle-timeout) "
                       "(before any byte of the reply)");
  check_kept(run);
}

TEST_CASE("a timeout before any byte of the reply is retried like a lost connection") {
  for (bool stream : {true, false}) {
    CAPTURE(stream);
    fake_server server{R"([{"latency_ms": 60000}, {"text": "second try"}])"};
    provider_run run;
    std::vector<std::string> args{"--stream-idle-timeout", "2", "--max-retries", "1", "go"};
    if (!stream)
      args.insert(args.begin(), "--no-stream");
    auto r = run.run(server, args, guarded());
    CHECK(r.exit_code == 0);
    CHECK(result_of(r)["result"] == "second try");
    auto retries = of_type(r, "system", "api_retry");
    REQUIRE(retries.size() == 1);
    CHECK(retries[0]["error"].get<std::string>().find("no data for 2 s") != std::string::npos);
  }
}

TEST_CASE("a reset mid-stream says how much had arrived and quotes it") {
  for (std::string provider : {"openai", "anthropic"}) {
    CAPTURE(provider);
    fake_server server{after_a_tool(R"({"text": "partial answer", "reset_after_events": 3})")};
    provider_run run{provider};
    auto r = run.run(server, {"--max-retries", "0", "go"}, guarded());
    CHECK(r.exit_code == 1);
    auto error = error_of(r);
    CAPTURE(error);
    CHECK(error.find(provider + ": request to ") == 0);
    CHECK(error.find(" bytes in 3 events); received: ") != std::string::npos);
    auto quoted = error.substr(error.find("; received: ") + 12);
    CHECK(quoted.rfind(provider == "openai" ? "data: {" : "event: message_start", 0) == 0);
    check_kept(run);
  }
}

TEST_CASE("bad Retry-After values neither retry at once nor overflow") {
  SUBCASE("negative and NaN are ignored: the back-off applies") {
    fake_server server{R"([{"status": 429, "headers": {"retry-after": "nan"}},
                           {"status": 503, "headers": {"retry-after-ms": "-5"}},
                           {"status": 529, "headers": {"retry-after": "-inf"}},
                           {"text": "done"}])"};
    provider_run run{"anthropic"};
    auto r = run.run(server, {"go"}, guarded());
    CHECK(r.exit_code == 0);
    auto retries = of_type(r, "system", "api_retry");
    REQUIRE(retries.size() == 3);
    for (int i = 0; i < 3; ++i) {
      auto delay = retries[i]["retry_delay_ms"].get<int64_t>();
      CHECK(delay >= 375 * (1 << i)); // 0.5 s * 2^i, -25%
      CHECK(delay <= 625 * (1 << i)); // +25%
    }
  }
  SUBCASE("infinite and huge wait the longest back-off") {
    for (std::string value : {"inf", "1e300"}) {
      CAPTURE(value);
      fake_server server{R"([{"status": 429, "headers": {"retry-after": ")" + value +
                         R"("}}, {"text": "too soon"}])"};
      provider_run run;
      auto opts = guarded();
      opts.interrupt_on_output = "\"api_retry\""; // no need to wait the 30 s out
      auto r = run.run(server, {"go"}, opts);
      auto retries = of_type(r, "system", "api_retry");
      REQUIRE(retries.size() == 1);
      CHECK(retries[0]["retry_delay_ms"] == 30000);
      CHECK(r.exit_code == 130);
      CHECK(server.requests().size() == 1);
    }
  }
}
