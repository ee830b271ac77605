// `troupe run` against the fake model server: both providers, both tool formats, streaming and
// not, and every fault the server can inject.

#include <doctest/doctest.h>

#include <map>
#include <set>
#include <chrono>
#include <sstream>

#include "support/provider_run.hpp"

using namespace troupe::test;
using nlohmann::json;

namespace {

struct provider_case {
  std::string provider; // "openai" or "anthropic"
};

const std::string shell_then_answer = R"([
  {"text": "Checking.", "tool_calls": [{"name": "shell", "input": {"command": "echo tool-ran"}}]},
  {"text": "The tool ran.", "usage": {"input_tokens": 20, "output_tokens": 7}}])";

} // namespace

TEST_CASE("native tool calls round-trip through both providers, streaming and not") {
  for (std::string provider : {"openai", "anthropic"})
    for (bool stream : {true, false}) {
      CAPTURE(provider);
      CAPTURE(stream);
      fake_server server{shell_then_answer};
      provider_run run{provider};
      std::vector<std::string> args{"go"};
      if (!stream)
        args.insert(args.begin(), "--no-stream");
      auto r = run.run(server, args);
      CHECK(r.exit_code == 0);
      auto result = result_of(r);
      CHECK(result["subtype"] == "success");
      CHECK(result["result"] == "The tool ran.");
      CHECK(result["usage"]["output_tokens"].get<int>() >= 7);
      auto requests = server.requests();
      REQUIRE(requests.size() == 2);
      for (auto& req : requests)
        CHECK(req["violation"].is_null());
      auto& first = requests[0]["body"];
      CHECK(first["stream"].is_boolean() == stream);
      CHECK(first["tools"].size() == 14);
      auto second = requests[1]["body"].dump();
      CHECK(second.find("tool-ran") != std::string::npos); // the result went back
      auto tool = of_type(r, "user");
      REQUIRE(tool.size() == 2);
      CHECK(tool[1]["message"]["content"][0]["content"] == "tool-ran\n");
    }
}

TEST_CASE("after SessionStart hooks the shell starts with the first request, and is ready when "
          "the model's reply comes") {
  // How long the shell had run when its first command ran: its start (clock ticks since boot,
  // /proc/$$/stat field 22) against the uptime now.
  const std::string age = "read up _ < /proc/uptime; "
                          "echo \"$up $(cut -d' ' -f22 /proc/$$/stat) $(getconf CLK_TCK)\"";
  for (std::string provider : {"openai", "anthropic"}) {
    CAPTURE(provider);
    json script = json::array(
      {{{"text", ""},
        {"latency_ms", 1000},
        {"tool_calls", json::array({{{"name", "shell"}, {"input", {{"command", age}}}}})}},
       {{"text", "done"}}});
    fake_server server{script.dump()};
    provider_run run{provider};
    auto settings = run.dir / "settings.json";
    write_file(settings, R"({"hooks": {"SessionStart": [{"hooks": [{"type": "command",
                           "command": "sleep 1"}]}]}})");
    auto r = run.run(server, {"--settings", settings.string(), "go"});
    REQUIRE(r.exit_code == 0);
    auto log = run.transcript();
    REQUIRE(log.size() >= 3);
    std::istringstream words{log[2]["content"].get<std::string>()};
    double up = 0, started = 0, ticks = 0;
    words >> up >> started >> ticks;
    REQUIRE_FALSE(words.fail());
    // Started with the first request, it has waited out the model's second (~1 s); as the run
    // was launched, before the hook (which may set up the workspace), it would be ~2 s old; by
    // the command, not ahead, ~0 s.
    auto ran_for = up - started / ticks;
    CHECK(ran_for > 0.6);
    CHECK(ran_for < 1.6);
  }
}

TEST_CASE("calls that share an id, in one reply or from reply to reply, each get their own") {
  // A server that reuses ids: both calls of the first reply are "dup", and so is the next one.
  auto call = [](const std::string& command) {
    return json{{"name", "shell"}, {"input", {{"command", command}}}, {"id", "dup"}};
  };
  json script = json::array({{{"text", ""}, {"tool_calls", {call("echo one"), call("echo two")}}},
                             {{"text", ""}, {"tool_calls", {call("echo three")}}},
                             {{"text", "done"}}});
  for (std::string provider : {"openai", "anthropic"}) {
    CAPTURE(provider);
    fake_server server{script.dump()};
    provider_run run{provider};
    auto r = run.run(server, {"go"});
    CHECK(r.exit_code == 0);
    auto requests = server.requests();
    CHECK(requests.size() == 3);
    if (requests.size() != 3)
      continue; // the other provider is still tried
    for (auto& req : requests)
      CHECK(req["violation"].is_null());
    // The last request: three calls with three ids, each answered by its own command's output.
    std::vector<std::string> ids;
    std::map<std::string, std::string> answers;
    for (auto& m : requests[2]["body"]["messages"]) {
      for (auto& c : m.value("tool_calls", json::array()))
        ids.push_back(c["id"]);
      if (m["role"] == "tool")
        answers[m["tool_call_id"]] = m["content"];
      if (m["content"].is_array())
        for (auto& block : m["content"]) {
          if (block["type"] == "tool_use")
            ids.push_back(block["id"]);
          if (block["type"] == "tool_result")
            answers[block["tool_use_id"]] = block["content"];
        }
    }
    CHECK(ids.size() == 3);
    if (ids.size() != 3)
      continue;
    CHECK(ids[0] == "dup");
    CHECK(std::set<std::string>(ids.begin(), ids.end()).size() == 3);
    CHECK(answers[ids[0]] == "one\n");
    CHECK(answers[ids[1]] == "two\n");
    CHECK(answers[ids[2]] == "three\n");
  }
}

TEST_CASE("a streamed reply is whole at its closing event ([DONE], message_stop), not when its "
          "body ends: the step goes on while the server holds the body open") {
  // Each reply's body ends 3 s after its closing event, the connection kept: a run that
  // waited for the body's end would take over 6 s and send its second request 3 s late.
  const std::string script = R"([
    {"text": "", "linger_ms": 3000,
     "tool_calls": [{"name": "shell", "input": {"command": "echo lingered"}}]},
    {"text": "done", "linger_ms": 3000}])";
  for (std::string provider : {"openai", "anthropic"}) {
    CAPTURE(provider);
    fake_server server{script};
    provider_run run{provider};
    auto began = std::chrono::steady_clock::now();
    auto r = run.run(server, {"go"});
    auto took = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    REQUIRE(r.exit_code == 0);
    CHECK(result_of(r)["result"] == "done");
    auto log = run.transcript();
    REQUIRE(log.size() >= 4);
    CHECK(log[2]["content"] == "lingered\n");
    std::vector<double> sent;
    for (auto& request : server.requests())
      if (!request.value("naming", false))
        sent.push_back(request["received_at"].get<double>());
    REQUIRE(sent.size() == 2);
    CHECK(sent[1] - sent[0] < 2.0);
    CHECK(took < 2.5);
  }
}

TEST_CASE("a reply whole before its body ended gives its connection up when the next request "
          "goes: a server that holds every body open leaves troupe one such socket, not one a "
          "reply") {
  // Each command counts troupe's sockets (its shell is troupe's child without the sandbox).
  const std::string count = "ls -l /proc/$PPID/fd | grep -c 'socket:'";
  json script = json::array();
  for (int i = 0; i < 4; ++i)
    script.push_back({{"text", ""},
                      {"linger_ms", 4000},
                      {"tool_calls", json::array({{{"name", "shell"}, {"input", {{"command", count}}}}})}});
  script.push_back({{"text", "done"}});
  for (std::string provider : {"openai", "anthropic"}) {
    CAPTURE(provider);
    fake_server server{script.dump()};
    provider_run run{provider};
    auto r = run.run(server, {"--sandbox", "off", "go"});
    REQUIRE(r.exit_code == 0);
    std::vector<int> sockets;
    for (auto& m : run.transcript())
      if (m["role"] == "tool")
        sockets.push_back(std::stoi(m["content"].get<std::string>()));
    REQUIRE(sockets.size() == 4);
    // The reply just read still holds its connection; the ones before it were given up.
    CHECK(sockets[1] == sockets[0]);
    CHECK(sockets[2] == sockets[0]);
    CHECK(sockets[3] == sockets[0]);
  }
}

TEST_CASE("markdown and xml tool formats: no tools in the request, calls run, results as text") {
  struct format_case {
    std::string name;
    std::string call;    // a reply that runs `echo from-block`
    std::string example; // what the system prompt shows
  };
  std::vector<format_case> formats = {
    {"markdown", R"(Let me look.\n```shell\necho from-block\n```)", "```shell"},
    {"xml", R"(Let me look.\n<tool-use>\n<shell>\necho from-block\n</shell>\n</tool-use>)",
     "<tool-use>"},
  };
  for (std::string provider : {"openai", "anthropic"})
    for (auto& format : formats) {
      CAPTURE(provider);
      CAPTURE(format.name);
      fake_server server{R"([{"text": ")" + format.call + R"("},
                             {"text": "Done."}])"};
      provider_run run{provider};
      auto r = run.run(server, {"--tool-format", format.name, "go"});
      CHECK(r.exit_code == 0);
      auto requests = server.requests();
      REQUIRE(requests.size() == 2);
      CHECK(requests[1]["violation"].is_null());
      CHECK_FALSE(requests[0]["body"].contains("tools"));
      auto system = provider == "openai" ? requests[0]["body"]["messages"][0]["content"]
                                         : requests[0]["body"]["system"];
      CHECK(system.get<std::string>().find(format.example) != std::string::npos);
      CHECK(requests[1]["body"].dump().find("from-block\\n") != std::string::npos);
      CHECK(result_of(r)["num_steps"] == 2);
    }
}

TEST_CASE("with native tools a fenced block in the text is not run") {
  fake_server server{R"([{"text": "Try this:\n```shell\ntouch should-not-exist\n```"}])"};
  provider_run run;
  auto r = run.run(server, {"go"});
  CHECK(r.exit_code == 0);
  CHECK_FALSE(std::filesystem::exists(run.dir / "work/should-not-exist"));
  CHECK(server.requests().size() == 1);
}

TEST_CASE("text streams as stream_event lines with --include-partial-messages") {
  fake_server server{R"([{"text": "a fairly long answer in pieces"}])"};
  provider_run run{"anthropic"};
  auto r = run.run(server, {"--include-partial-messages", "go"});
  CHECK(r.exit_code == 0);
  std::string joined;
  for (auto& e : of_type(r, "stream_event"))
    joined += e["event"]["delta"]["text"].get<std::string>();
  CHECK(joined == "a fairly long answer in pieces");
  CHECK(of_type(r, "stream_event").size() > 2);
}

TEST_CASE("retryable statuses are retried with events, honouring retry-after") {
  for (std::string provider : {"openai", "anthropic"}) {
    CAPTURE(provider);
    fake_server server{R"([{"status": 429, "headers": {"retry-after-ms": "20"}},
                           {"status": 529, "headers": {"retry-after": "0.01"}},
                           {"status": 503, "headers": {"retry-after-ms": "10"}},
                           {"text": "finally"}])"};
    provider_run run{provider};
    auto r = run.run(server, {"go"});
    CHECK(r.exit_code == 0);
    CHECK(result_of(r)["result"] == "finally");
    auto retries = of_type(r, "system", "api_retry");
    REQUIRE(retries.size() == 3);
    CHECK(retries[0]["attempt"] == 1);
    CHECK(retries[0]["error_status"] == 429);
    CHECK(retries[0]["retry_delay_ms"] == 20);
    CHECK(retries[1]["error_status"] == 529);
    CHECK(retries[1]["retry_delay_ms"] == 10); // retry-after in seconds: 0.01
    CHECK(retries[2]["attempt"] == 3);
    CHECK(retries[2]["max_retries"] == 8);
  }
}

TEST_CASE("retry-after in whole and fractional seconds is the delay taken, for both providers") {
  // Real APIs send whole seconds ("retry-after: 1"); the wait is measured at the server,
  // between the refused request and the retry.
  for (std::string provider : {"openai", "anthropic"})
    for (auto [value, ms] : {std::pair<std::string, int>{"1", 1000}, {"0.3", 300}}) {
      CAPTURE(provider);
      CAPTURE(value);
      fake_server server{R"([{"status": 429, "headers": {"retry-after": ")" + value +
                         R"("}}, {"text": "after the wait"}])"};
      provider_run run{provider};
      auto r = run.run(server, {"go"});
      CHECK(r.exit_code == 0);
      CHECK(result_of(r)["result"] == "after the wait");
      auto retries = of_type(r, "system", "api_retry");
      REQUIRE(retries.size() == 1);
      CHECK(retries[0]["retry_delay_ms"] == ms);
      std::vector<double> sent;
      for (auto& request : server.requests())
        if (!request.value("naming", false))
          sent.push_back(request["received_at"].get<double>());
      REQUIRE(sent.size() == 2);
      CHECK(sent[1] - sent[0] >= ms / 1000.0 - 0.01);
      CHECK(sent[1] - sent[0] < ms / 1000.0 + 2);
    }
}

TEST_CASE("retries are bounded by --max-retries") {
  fake_server server{R"([{"status": 500, "headers": {"retry-after-ms": "1"}},
                         {"status": 500, "headers": {"retry-after-ms": "1"},
                          "error_message": "still broken"}])"};
  provider_run run;
  auto r = run.run(server, {"--max-retries", "1", "go"});
  CHECK(r.exit_code == 1);
  CHECK(of_type(r, "system", "api_retry").size() == 1);
  CHECK(result_of(r)["error"].get<std::string>().find("still broken") != std::string::npos);
}

TEST_CASE("client errors end the run at once with the provider's own message") {
  for (std::string provider : {"openai", "anthropic"})
    for (int status : {400, 401, 403, 404}) {
      CAPTURE(provider);
      CAPTURE(status);
      fake_server server{"[{\"status\": " + std::to_string(status) +
                         ", \"error_message\": \"the provider says no\"}]"};
      provider_run run{provider};
      auto r = run.run(server, {"go"});
      CHECK(r.exit_code == 1);
      CHECK(of_type(r, "system", "api_retry").empty());
      auto result = result_of(r);
      CHECK(result["subtype"] == "error_during_execution");
      CHECK(result["error"].get<std::string>().find("the provider says no") != std::string::npos);
      CHECK(result["error"].get<std::string>().find(provider) == 0);
      // The prompt was logged before the failure.
      CHECK(run.transcript().size() == 1);
    }
}

TEST_CASE("a prompt still too long after compaction is its own error kind") {
  for (std::string provider : {"openai", "anthropic"}) {
    CAPTURE(provider);
    fake_server server{
      R"([{"prompt_too_long": true}, {"text": "summary"}, {"prompt_too_long": true}])"};
    provider_run run{provider};
    auto r = run.run(server, {"go"});
    CHECK(r.exit_code == 1);
    CHECK(result_of(r)["error_kind"] == "prompt_too_long");
  }
}

TEST_CASE("broken streams are clear errors that keep what was logged") {
  struct fault {
    std::string entry;
    std::string says;
  };
  std::vector<fault> faults = {
    {R"({"text": "partial answer", "cut_after_events": 3})", "failed: transfer closed"},
    {R"({"text": "hello", "malformed_sse": true})",
     "malformed JSON in a stream event; received: {not json"},
    {R"({"text": "hello", "no_stop": true})", "ended before"},
    {R"({"html": true})", "neither JSON nor an event stream (content-type text/html"},
  };
  for (std::string provider : {"openai", "anthropic"})
    for (auto& f : faults) {
      CAPTURE(provider);
      CAPTURE(f.says);
      fake_server server{"[" + f.entry + R"(, {"text": "unused"}])"};
      provider_run run{provider};
      auto r = run.run(server, {"--max-retries", "0", "go"});
      CHECK(r.exit_code == 1);
      auto error = result_of(r)["error"].get<std::string>();
      CHECK(error.rfind(provider + ": ", 0) == 0);
      CHECK(error.find(f.says) != std::string::npos);
      CHECK(run.transcript().size() == 1);
    }
}

TEST_CASE("unknown events are ignored and invalid UTF-8 is replaced, not fatal") {
  for (std::string provider : {"openai", "anthropic"}) {
    CAPTURE(provider);
    fake_server server{
      R"([{"text": "odd bytes here", "unknown_event": true, "invalid_utf8": true}])"};
    provider_run run{provider};
    auto r = run.run(server, {"go"});
    CHECK(r.exit_code == 0);
    auto text = result_of(r)["result"].get<std::string>();
    CHECK(text.find("\xef\xbf\xbd") != std::string::npos);
    CHECK(text.find("bytes here") != std::string::npos);
  }
}

TEST_CASE("an interrupt cancels a stream in flight") {
  fake_server server{R"([{"text": "going", "endless": true}])"};
  provider_run run{"anthropic"};
  process_options opts;
  opts.interrupt_after = std::chrono::milliseconds{700};
  opts.timeout = std::chrono::seconds{10};
  auto start = std::chrono::steady_clock::now();
  auto r = run.run(server, {"go"}, opts);
  CHECK(r.exit_code == 130);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds{3});
  CHECK(result_of(r)["terminal_reason"] == "interrupted");
}

TEST_CASE("a stream that goes silent fails after the idle timeout") {
  fake_server server{R"([{"silent_after_headers": true}, {"text": "unused"}])"};
  provider_run run;
  auto r = run.run(server, {"--idle-timeout", "1", "--max-retries", "1", "go"});
  CHECK(r.exit_code == 1);
  // Its head arrived: the reply had begun, so the stall is not retried.
  CHECK(of_type(r, "system", "api_retry").empty());
  CHECK(result_of(r)["error"] == "openai: the reply stalled: no data for 1 s "
                                 "(--stream-idle-timeout) (after 0 bytes in 0 events)");
}

TEST_CASE("an error status whose body never ends is reported as that error, and retried as one") {
  struct row {
    std::string script;                  // two errors: the first retried, the second reported
    std::vector<std::string> args;
    int first, last;                     // their statuses
    std::string limit;                   // what the report says of the body
  };
  std::vector<row> rows = {
    // A body that stalls after its error...
    {R"([{"status": 500, "error_message": "overloaded here", "silent_after_headers": true},
         {"status": 503, "silent_after_headers": true}])",
     {"--idle-timeout", "1"}, 500, 503,
     "(its body unfinished: the reply stalled: no data for 1 s"},
    // ...or floods past --max-reply-bytes.
    {R"([{"status": 429, "error_message": "slow down", "flood": true},
         {"status": 500, "flood": true}])",
     {"--max-reply-bytes", "200000"}, 429, 500, "(--max-reply-bytes)"}};
  for (auto& [script, args, first, last, limit] : rows)
    for (std::string provider : {"openai", "anthropic"}) {
      CAPTURE(provider);
      CAPTURE(first);
      fake_server server{script};
      provider_run run{provider};
      auto argv = args;
      argv.insert(argv.end(), {"--max-retries", "1", "go"});
      auto r = run.run(server, argv);
      CHECK(r.exit_code == 1);
      auto retries = of_type(r, "system", "api_retry");
      REQUIRE(retries.size() == 1);
      CHECK(retries[0]["error_status"] == first);
      auto error = result_of(r)["error"].get<std::string>();
      CHECK(error.find("HTTP " + std::to_string(last)) != std::string::npos);
      CHECK(error.find("(its body unfinished: ") != std::string::npos);
      CHECK(error.find(limit) != std::string::npos);
      CHECK(server.requests().size() == 2);
    }
}

TEST_CASE("a connection that cannot be made is retried, then reported") {
  int port = 0;
  {
    fake_server closed{"[]"};
    port = closed.port(); // nothing listens here once it is gone
  }
  temp_dir dir;
  process_options opts;
  opts.env["OPENAI_API_KEY"] = "k";
  opts.env["OPENAI_BASE_URL"] = "http://127.0.0.1:" + std::to_string(port) + "/v1";
  opts.env["TROUPE_HOME"] = (dir / "home").string();
  auto r = run_troupe({"run", "--cwd", dir.path().string(), "--model", "openai/m",
                       "--output-format", "stream-json", "--max-retries", "1", "go"},
                      opts);
  CHECK(r.exit_code == 1);
  CHECK(of_type(r, "system", "api_retry").size() == 1);
  CHECK(result_of(r)["error"].get<std::string>().find("failed") != std::string::npos);
}

TEST_CASE("provider configuration errors exit 2 before any request") {
  temp_dir dir;
  struct row {
    std::map<std::string, std::string> env;
    std::string model;
    std::string says;
  };
  std::vector<row> rows = {
    {{{"OPENAI_API_KEY", ""}}, "openai/gpt-x", "set OPENAI_API_KEY"},
    {{{"ANTHROPIC_API_KEY", ""}}, "anthropic/claude-x", "set ANTHROPIC_API_KEY"},
    {{{"OPENAI_API_KEY", "k"}, {"OPENAI_BASE_URL", "not a url"}}, "openai/gpt-x",
     "invalid OPENAI_BASE_URL 'not a url'"},
    {{{"ANTHROPIC_API_KEY", "k"}, {"ANTHROPIC_BASE_URL", "ftp://127.0.0.1"}}, "anthropic/c",
     "invalid ANTHROPIC_BASE_URL"},
    {{{"OPENAI_API_KEY", "k"}, {"OPENAI_BASE_URL", "http://"}}, "openai/m", "invalid OPENAI_BASE_URL"},
    {{{"OPENAI_API_KEY", "k"}, {"OPENAI_BASE_URL", "http://:8080/v1"}}, "openai/m",
     "invalid OPENAI_BASE_URL"},
    {{{"OPENAI_API_KEY", "k"}, {"OPENAI_BASE_URL", "http://127.0.0.1:99999"}}, "openai/m",
     "invalid OPENAI_BASE_URL"},
    {{{"OPENAI_API_KEY", "k"}, {"OPENAI_BASE_URL", "http://[::1/v1"}}, "openai/m",
     "invalid OPENAI_BASE_URL"},
    {{{"OPENAI_API_KEY", "k"}, {"OPENAI_BASE_URL", "http://host name/v1"}}, "openai/m",
     "invalid OPENAI_BASE_URL"},
    {{{"OPENAI_API_KEY", "k"}, {"TROUPE_LIBCURL", "/nonexistent/libcurl.so"}}, "openai/m",
     "cannot load libcurl (/nonexistent/libcurl.so)"},
    {{{"OPENAI_API_KEY", "k"}, {"TROUPE_HTTP_CLIENT", "curl"}}, "openai/m",
     "invalid TROUPE_HTTP_CLIENT 'curl': expected builtin"},
    {{{"OPENAI_API_KEY", "sk-a\r\nX-Evil: 1"}}, "openai/m",
     "OPENAI_API_KEY holds a control character (a line break?) inside the key"},
    {{{"ANTHROPIC_API_KEY", "sk-a\nb"}}, "anthropic/claude-x",
     "ANTHROPIC_API_KEY holds a control character"},
    {{{"OPENAI_API_KEY", "k"}, {"OPENAI_BASE_URL", "http://user:secretpw@127.0.0.1/v1"}}, "openai/m",
     "invalid OPENAI_BASE_URL 'http://…@127.0.0.1/v1'"},
    {{{"OPENAI_API_KEY", "k"}, {"OPENAI_BASE_URL", "HTTPS://user:secretpw@127.0.0.1/v1"}},
     "openai/m", "invalid OPENAI_BASE_URL 'HTTPS://…@127.0.0.1/v1'"},
    {{{"OPENAI_API_KEY", "k"}, {"OPENAI_BASE_URL", "http://user:se/cr@et@127.0.0.1"}}, "openai/m",
     "invalid OPENAI_BASE_URL 'http://…@127.0.0.1'"},
    {{}, "mistral/large", "unknown model 'mistral/large'"},
    {{}, "openai/", "unknown model 'openai/'"},
  };
  for (auto& row : rows) {
    CAPTURE(row.says);
    process_options opts;
    opts.env = row.env;
    opts.env["TROUPE_HOME"] = (dir / "home").string();
    auto r = run_troupe({"run", "--cwd", dir.path().string(), "--model", row.model, "go"}, opts);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(row.says) != std::string::npos);
    CHECK(split_lines(r.err).size() == 1);
  }
}

TEST_CASE("ollama needs no key and defaults to the local OpenAI-compatible endpoint") {
  fake_server server{R"([{"text": "local model here"}])"};
  temp_dir dir;
  process_options opts;
  opts.env["OLLAMA_HOST"] = "127.0.0.1:" + std::to_string(server.port());
  opts.env["OPENAI_API_KEY"] = "";
  opts.env["TROUPE_HOME"] = (dir / "home").string();
  auto r = run_troupe({"run", "--cwd", dir.path().string(), "--model", "ollama/llama3",
                       "--output-format", "stream-json", "go"},
                      opts);
  CHECK(r.exit_code == 0);
  auto requests = server.requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0]["path"] == "/v1/chat/completions");
  CHECK(requests[0]["body"]["model"] == "llama3");
  CHECK_FALSE(requests[0]["headers"].contains("authorization"));
}

TEST_CASE("libcurl is loaded only by a run whose requests need it") {
  // The session's shell is troupe's child: it reads which libraries its parent has mapped.
  const std::string count_libcurl = R"([
    {"text": "", "tool_calls": [{"name": "shell",
      "input": {"command": "grep -c libcurl /proc/$PPID/maps || true"}}]},
    {"text": "counted"}])";
  auto mapped_count = [](const std::vector<json>& transcript) {
    for (auto& m : transcript)
      if (m["role"] == "tool")
        return std::stoi(m["content"].get<std::string>());
    FAIL("no tool result in the transcript");
    return -1;
  };

  // Plain http to a local server: the engine's own client, no libcurl.
  fake_server local{count_libcurl};
  provider_run own;
  process_options builtin;
  builtin.env["TROUPE_HTTP_CLIENT"] = "";
  for (const char* proxy : {"http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"})
    builtin.env[proxy] = ""; // one set around the tests would hand the run to libcurl
  REQUIRE(own.run(local, {"go"}, builtin).exit_code == 0);
  CHECK(mapped_count(own.transcript()) == 0);

  // Asked for, libcurl carries the same run.
  fake_server asked{count_libcurl};
  provider_run through_curl;
  process_options libcurl;
  libcurl.env["TROUPE_HTTP_CLIENT"] = "libcurl";
  REQUIRE(through_curl.run(asked, {"go"}, libcurl).exit_code == 0);
  CHECK(mapped_count(through_curl.transcript()) > 0);

  // A proxy in the environment is libcurl's to honour (here it excepts the loopback).
  fake_server proxied{count_libcurl};
  provider_run via_proxy_rules;
  process_options proxy;
  proxy.env["TROUPE_HTTP_CLIENT"] = "";
  proxy.env["http_proxy"] = "http://127.0.0.1:9";
  proxy.env["no_proxy"] = "127.0.0.1";
  REQUIRE(via_proxy_rules.run(proxied, {"go"}, proxy).exit_code == 0);
  CHECK(mapped_count(via_proxy_rules.transcript()) > 0);

  temp_dir dir;
  auto script = dir / "script.jsonl";
  std::vector<json> lines;
  for (auto& entry : json::parse(count_libcurl))
    lines.push_back(entry);
  write_script(script, lines);
  process_options opts;
  opts.env["TROUPE_HOME"] = (dir / "home").string();
  auto r = run_troupe({"run", "--cwd", dir.path().string(), "--allow", "shell", "--model",
                       "scripted:" + script.string(), "go"},
                      opts);
  REQUIRE(r.exit_code == 0);
  for (auto& entry : std::filesystem::directory_iterator(dir / "home/sessions"))
    CHECK(mapped_count(read_jsonl(entry.path() / "transcript.jsonl")) == 0);
}

TEST_CASE("an invalid TROUPE_HTTP_CLIENT stops every command that could send a request") {
  temp_dir dir;
  process_options opts;
  opts.env["TROUPE_HOME"] = (dir / "home").string();
  opts.env["TROUPE_HTTP_CLIENT"] = "LIBCURL";
  for (std::vector<std::string> args :
       {std::vector<std::string>{"run", "--model", "openai/m", "go"},
        std::vector<std::string>{"fleet", "tasks.jsonl", "--model", "openai/m"},
        std::vector<std::string>{"mcp", "list"}, std::vector<std::string>{"chat"}}) {
    CAPTURE(args[0]);
    auto r = run_troupe(args, opts);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("invalid TROUPE_HTTP_CLIENT 'LIBCURL': expected builtin") != std::string::npos);
  }
}

TEST_CASE("a subagent whose own model needs a libcurl that cannot load fails at its launch, "
          "saying why") {
  // The parent talks plain http to the fake server (no libcurl); the subagent's model is an
  // ollama's behind https, so its launch needs libcurl, which TROUPE_LIBCURL points nowhere.
  fake_server server{R"([
    {"text": "", "tool_calls": [{"name": "task",
      "input": {"prompt": "look", "model": "ollama/llama3"}}]},
    {"text": "the subagent could not start"}])"};
  provider_run run;
  process_options opts;
  opts.env["TROUPE_LIBCURL"] = "/nonexistent/libcurl.so";
  opts.env["OLLAMA_HOST"] = "https://127.0.0.1:9";
  opts.env["TROUPE_HTTP_CLIENT"] = "";
  auto r = run.run(server, {"--allow", "task", "go"}, opts);
  CHECK(r.exit_code == 0);
  bool said = false;
  for (auto& m : run.transcript())
    if (m["role"] == "tool")
      said = said || m["content"].get<std::string>().find("cannot load libcurl (/nonexistent/libcurl.so)") !=
                       std::string::npos;
  CHECK(said);
}

TEST_CASE("an API key read from a file with CRLF line ends works, its line end dropped") {
  fake_server server{R"([{"text": "fine"}])"};
  temp_dir dir;
  process_options opts;
  opts.env["TROUPE_HOME"] = (dir / "home").string();
  opts.env["OPENAI_API_KEY"] = " sk-crlf\r\n";
  opts.env["OPENAI_BASE_URL"] = server.url() + "/v1";
  auto r = run_troupe({"run", "--cwd", dir.path().string(), "--model", "openai/m", "go"}, opts);
  CHECK(r.exit_code == 0);
  REQUIRE_FALSE(server.requests().empty());
  CHECK(server.requests().at(0)["headers"]["authorization"] == "Bearer sk-crlf");
}

TEST_CASE("a run that ends on bad input while libcurl is still loading exits cleanly, every time") {
  // libcurl starts loading on a helper thread from the first moment; an early exit must wait
  // for it rather than run exit's destructors under dlopen (a crash in ~1 run of 10).
  temp_dir dir;
  process_options opts;
  opts.env["TROUPE_HOME"] = (dir / "home").string();
  opts.env["OPENAI_API_KEY"] = "k";
  opts.env["OPENAI_BASE_URL"] = "not a url";
  for (int i = 0; i < 30; ++i) {
    CAPTURE(i);
    auto r = run_troupe({"run", "--model", "openai/m", "go"}, opts);
    REQUIRE(r.exit_code == 2);
  }
}
