#include <doctest/doctest.h>

#include "orchestrator/output_format.hpp"

using namespace troupe;
using nlohmann::json;

TEST_CASE("stream-json lines follow Claude Code's shapes") {
  auto init = to_stream_json(session_started_event{"s", "/w", "scripted:x", {"shell"}, "/t", 0});
  CHECK(init["type"] == "system");
  CHECK(init["subtype"] == "init");
  CHECK(init["session_id"] == "s");

  message reply;
  reply.id = "m1";
  reply.role = role::assistant;
  reply.content = "running";
  reply.tool_calls = {{"c1", "shell", {{"command", "ls"}}, call_format::native}};
  auto assistant = to_stream_json(message_event{"s", reply});
  CHECK(assistant["type"] == "assistant");
  CHECK(assistant["message"]["content"] ==
        json::array({{{"type", "text"}, {"text", "running"}},
                     {{"type", "tool_use"}, {"id", "c1"}, {"name", "shell"},
                      {"input", {{"command", "ls"}}}}}));

  auto tool = make_tool_message(reply.tool_calls[0], tool_result{"files", false, 0, false});
  auto user = to_stream_json(message_event{"s", tool});
  CHECK(user["type"] == "user");
  CHECK(user["message"]["content"][0] ==
        json{{"type", "tool_result"}, {"tool_use_id", "c1"}, {"content", "files"},
             {"is_error", false}});
}

TEST_CASE("the result line names subtype, terminal reason and turns") {
  session_ended_event ended;
  ended.session_id = "s";
  ended.reason = terminal_reason::max_turns;
  ended.state.turn_count = 1;
  ended.result_text = "partial";
  auto line = to_stream_json(ended);
  CHECK(line["type"] == "result");
  CHECK(line["subtype"] == "error_max_turns");
  CHECK(line["terminal_reason"] == "max_turns");
  CHECK(line["num_turns"] == 1);
  CHECK(line["is_error"] == true);
  CHECK(line["result"] == "partial");
  CHECK(std::string{result_subtype(terminal_reason::completed)} == "success");
  CHECK(std::string{result_subtype(terminal_reason::error)} == "error_during_execution");
  CHECK(std::string{result_subtype(terminal_reason::interrupted)} == "error_during_execution");
}
