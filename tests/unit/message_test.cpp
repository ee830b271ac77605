#include <doctest/doctest.h>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/deep_to_string.hpp>

#include "protocol/message.hpp"
#include "protocol/model.hpp"
#include "support/test_support.hpp"

using namespace troupe;
using nlohmann::json;

namespace {

message full_message() {
  message m;
  m.id = "msg_1";
  m.role = role::assistant;
  m.content = "running ```shell\nls\n```";
  m.tool_calls = {{"call_1", "shell", {{"command", "ls"}}, call_format::markdown},
                  {"call_2", "read", {{"path", "a"}, {"start_line", 2}}, call_format::native}};
  m.origin = message_origin::model;
  m.timestamp_ms = 1764555555123;
  return m;
}

} // namespace

TEST_CASE("message round-trips through JSON") {
  auto m = full_message();
  CHECK(json(m).get<message>() == m);
  auto tool = make_tool_message(m.tool_calls[0], tool_result{"out", true, 2, true});
  tool.id = "msg_2";
  tool.timestamp_ms = 5;
  CHECK(json(tool).get<message>() == tool);
  CHECK(json(tool)["tool_call_id"] == "call_1");
  CHECK(json(tool)["truncated"] == true);
}

TEST_CASE("a user message leaves tool fields out of its JSON") {
  message m;
  m.id = "msg_3";
  m.role = role::user;
  m.content = "hi";
  CHECK(json(m) == json{{"id", "msg_3"}, {"role", "user"}, {"content", "hi"}, {"timestamp_ms", 0}});
}

TEST_CASE("tool call and tool result round-trip through JSON") {
  tool_call c{"c", "save", {{"path", "p"}, {"content", "x"}}, call_format::xml};
  CHECK(json(c).get<tool_call>() == c);
  tool_result r{"output", true, 137, true};
  CHECK(json(r).get<tool_result>() == r);
}

TEST_CASE("an unknown role is an error, not a silent default") {
  json j = {{"role", "wizard"}, {"content", "x"}};
  CHECK_THROWS_WITH(j.get<message>(), doctest::Contains("unknown role 'wizard'"));
}

TEST_CASE("each message origin has one spelling that reads back as itself") {
  for (auto o = uint8_t(message_origin::none); o <= uint8_t(message_origin::other); ++o) {
    auto origin = message_origin(o);
    CAPTURE(to_string(origin));
    CHECK(origin_from_string(to_string(origin)) == origin);
    message m;
    m.origin = origin;
    CHECK(json(m).get<message>().origin == origin);
    CHECK(json(m).contains("origin") == (origin != message_origin::none));
  }
  CHECK(std::string{to_string(message_origin::task_notification)} == "task-notification");
  CHECK(std::string{to_string(message_origin::hook_blocked)} == "hook_blocked");
}

TEST_CASE("an origin spelled by another version still loads, as other") {
  json j = {{"role", "user"}, {"content", "x"}, {"origin", "telepathy"}};
  CHECK(j.get<message>().origin == message_origin::other);
  CHECK(j.get<message>().content == "x");
}

TEST_CASE("messages and snapshots survive CAF's binary serialisation") {
  troupe::test::actor_system_fixture actors;
  auto m = full_message();
  context_snapshot snapshot{{std::make_shared<const message>(m), std::make_shared<const message>(m)}};
  std::vector<char> buffer;
  caf::binary_serializer sink{actors.sys(), buffer};
  REQUIRE(!sink(snapshot));
  context_snapshot copy;
  caf::binary_deserializer source{actors.sys(), buffer};
  REQUIRE(!source(copy));
  REQUIRE(copy.messages.size() == 2);
  CHECK(*copy.messages[1] == m);
  CHECK(caf::deep_to_string(m).find("running") != std::string::npos);
}

TEST_CASE("a model request shares its system prompt and tools, and serialises them by value") {
  troupe::test::actor_system_fixture actors;
  shared_value<std::string> prompt{std::string(3000, 'p')};
  shared_value<std::vector<tool_descriptor>> tools{
    std::vector<tool_descriptor>{{"shell", "runs a command", {{"type", "object"}}}}};
  model_request first{prompt, {}, tools};
  model_request second{prompt, {}, tools};
  // A thousand agents' requests hold one prompt and one tool list, not a thousand copies.
  CHECK(&first.system_prompt.get() == &second.system_prompt.get());
  CHECK(&first.tools.get() == &second.tools.get());
  std::vector<char> buffer;
  caf::binary_serializer sink{actors.sys(), buffer};
  REQUIRE(!sink(first));
  model_request copy;
  caf::binary_deserializer source{actors.sys(), buffer};
  REQUIRE(!source(copy));
  CHECK(*copy.system_prompt == std::string(3000, 'p'));
  REQUIRE(copy.tools->size() == 1);
  CHECK(copy.tools->front().name == "shell");
  CHECK(&copy.system_prompt.get() != &first.system_prompt.get()); // a remote node's own copy
  CHECK(shared_value<std::string>{}->empty());
}

TEST_CASE("a refused call's result says who refused it, and old transcripts load as ran") {
  tool_call call{"c", "shell", {{"command", "rm -rf /"}}, call_format::native};
  for (auto r = uint8_t(refusal::none); r <= uint8_t(refusal::other); ++r) {
    auto by = refusal(r);
    CAPTURE(to_string(by));
    CHECK(refusal_from_string(to_string(by)) == by);
    tool_result result{"Permission denied: no.", true, -1, false, by};
    CHECK(json(result).get<tool_result>() == result);
    auto m = make_tool_message(call, result);
    CHECK(m.refused == by);
    CHECK(json(m).get<message>() == m);
    // Left out when nothing refused the call: the lines of a call that ran stay as they were.
    CHECK(json(m).contains("refused") == (by != refusal::none));
    CHECK(json(result).contains("refused") == (by != refusal::none));
  }
  CHECK(json(tool_result{"", true, -1, false, refusal::plan_mode})["refused"] == "plan_mode");
  // A line written before the field, and one from a version that knows another refuser.
  json old = {{"role", "tool"},       {"content", "Permission denied: x."},
              {"tool_call_id", "c"},  {"tool_name", "shell"},
              {"is_error", true},     {"exit_code", -1}};
  CHECK(old.get<message>().refused == refusal::none);
  old["refused"] = "the_moon";
  CHECK(old.get<message>().refused == refusal::other);
  CHECK(old.get<message>().content == "Permission denied: x.");
}

TEST_CASE("a refusal survives CAF's binary serialisation") {
  troupe::test::actor_system_fixture actors;
  auto m = make_tool_message({"c", "shell", {}, call_format::native},
                             tool_result{"Blocked by a PreToolUse hook: no", true, -1, false,
                                         refusal::hook});
  std::vector<char> buffer;
  caf::binary_serializer sink{actors.sys(), buffer};
  REQUIRE(!sink(m));
  message copy;
  caf::binary_deserializer source{actors.sys(), buffer};
  REQUIRE(!source(copy));
  CHECK(copy == m);
  CHECK(copy.refused == refusal::hook);
}
