#include <doctest/doctest.h>

#include <unistd.h>

#include "orchestrator/output_format.hpp"
#include "orchestrator/stream_json_client.hpp"
#include "tools/claude_code_names.hpp"

using namespace troupe;
using nlohmann::json;

TEST_CASE("a client's lines are sorted, and bad ones say what is wrong") {
  auto user = parse_client_line(R"({"type":"user","message":{"role":"user","content":"hi"}})");
  CHECK(user.what == client_line::kind::user);
  CHECK(user.text == "hi");
  auto blocks = parse_client_line(
    R"({"type":"user","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}})");
  CHECK(blocks.what == client_line::kind::user);
  CHECK(blocks.text == "a\n\nb");
  auto image = parse_client_line(
    R"({"type":"user","message":{"role":"user","content":[{"type":"image","source":{}}]}})");
  CHECK(image.what == client_line::kind::invalid);
  CHECK(image.error.find("\"image\" block") != std::string::npos);

  auto request = parse_client_line(
    R"({"type":"control_request","request_id":"r1","request":{"subtype":"interrupt"}})");
  CHECK(request.what == client_line::kind::control_request);
  CHECK(request.request_id == "r1");
  CHECK(request.subtype == "interrupt");

  auto answer = parse_client_line(
    R"({"type":"control_response","response":{"subtype":"success","request_id":"t1","response":{"behavior":"allow"}}})");
  CHECK(answer.what == client_line::kind::control_response);
  CHECK(answer.body["behavior"] == "allow");
  CHECK(answer.error.empty());
  auto failed = parse_client_line(
    R"({"type":"control_response","response":{"subtype":"error","request_id":"t1"}})");
  CHECK(failed.error == "the client failed");

  for (const char* bad : {"not json", "[1]", R"({"type":"nope"})", R"({"no":"type"})",
                          R"({"type":"user"})", R"({"type":"user","message":{"content":""}})",
                          R"({"type":"control_request","request":{}})"}) {
    CAPTURE(bad);
    auto line = parse_client_line(bad);
    CHECK(line.what == client_line::kind::invalid);
    CHECK_FALSE(line.error.empty());
  }
  CHECK(parse_client_line(R"({"type":"keep_alive"})").what == client_line::kind::ignored);
}

TEST_CASE("initialize: hook callbacks, prompts, and what is refused") {
  auto init = read_initialize(json::parse(R"({"subtype":"initialize","systemPrompt":[""],
    "appendSystemPrompt":"be brief",
    "hooks":{"PreToolUse":[{"matcher":"Bash","hookCallbackIds":["hook_0","hook_1"],"timeout":5}]}})"),
                              "r1");
  REQUIRE(init);
  CHECK(init->system_prompt.empty());
  CHECK(init->append_system_prompt == "be brief");
  REQUIRE(init->hooks.size() == 2);
  CHECK(init->hooks[0].event == hook_event::pre_tool_use);
  CHECK(init->hooks[0].matcher == "Bash");
  CHECK(init->hooks[1].callback_id == "hook_1");
  CHECK(init->hooks[0].timeout == std::chrono::milliseconds{5000});
  CHECK_FALSE(read_initialize(json::parse(R"({"hooks":{"PreToolUse":[{"matcher":"x"}]}})"), "r"));
  CHECK_FALSE(read_initialize(json::parse(R"({"systemPrompt":7})"), "r"));
  // An event troupe lacks is skipped, not fatal (the SDK knows events troupe has none of).
  auto unknown = read_initialize(
    json::parse(R"({"hooks":{"SubagentStop":[{"hookCallbackIds":["h"]}],"Stop":[{"hookCallbackIds":["s"]}]}})"), "r");
  REQUIRE(unknown);
  CHECK(unknown->skipped_events == std::vector<std::string>{"SubagentStop"});
  REQUIRE(unknown->hooks.size() == 1);
  CHECK(unknown->hooks[0].callback_id == "s");
}

TEST_CASE("stdin is read line by line as it comes, and an oversized line is skipped") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  line_reader reader{fds[0], 16};
  std::string input = "first\r\n" + std::string(40, 'x') + "\nsecond\nlast";
  REQUIRE(::write(fds[1], input.data(), input.size()) == static_cast<ssize_t>(input.size()));
  ::close(fds[1]);
  std::string error;
  CHECK(reader.next(&error) == std::optional<std::string>{"first"});
  CHECK(error.empty());
  CHECK(reader.next(&error) == std::optional<std::string>{"second"});
  CHECK(error.find("more than 16 bytes") != std::string::npos);
  CHECK(reader.next() == std::optional<std::string>{"last"});
  CHECK_FALSE(reader.next());
  ::close(fds[0]);
}

TEST_CASE("permission modes in both spellings") {
  CHECK(troupe_mode_name("acceptEdits") == std::optional<std::string>{"accept-edits"});
  CHECK(troupe_mode_name("bypassPermissions") == std::optional<std::string>{"bypass"});
  CHECK(troupe_mode_name("plan") == std::optional<std::string>{"plan"});
  CHECK_FALSE(troupe_mode_name("yolo"));
  CHECK(claude_permission_mode("accept-edits") == "acceptEdits");
  CHECK(claude_permission_mode("default") == "default");
  CHECK(troupe_mode_name("dontAsk") == std::optional<std::string>{"dont-ask"});
  CHECK(claude_permission_mode("dont-ask") == "dontAsk");
}

TEST_CASE("a client reads Claude Code's tool names, and errors as an array") {
  auto init = to_stream_json(session_started_event{"s", "/w", "m", {"shell", "read"}, "/t", 0});
  use_claude_names(init);
  CHECK(init["tools"] == json::array({"Bash", "Read"}));
  message reply;
  reply.id = "m1";
  reply.role = role::assistant;
  reply.tool_calls = {{"c1", "read", {{"path", "a.txt"}}, call_format::native}};
  auto assistant = to_stream_json(message_event{"s", reply});
  use_claude_names(assistant);
  CHECK(assistant["message"]["content"][0]["name"] == "Read");
  CHECK(assistant["message"]["content"][0]["input"] == json{{"file_path", "a.txt"}});
  CHECK(assistant["uuid"] == "m1");
  CHECK(assistant["parent_tool_use_id"].is_null());

  session_ended_event ended;
  ended.reason = terminal_reason::max_turns;
  auto result = to_stream_json(ended);
  CHECK(result["subtype"] == "error_max_turns");
  REQUIRE(result["errors"].is_array());
  CHECK(result["errors"].size() == 1);
  ended.reason = terminal_reason::completed;
  CHECK_FALSE(to_stream_json(ended).contains("errors"));
  CHECK(to_stream_json(ended)["stop_reason"] == "end_turn");
}
