#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "protocol/events.hpp"

using namespace troupe;
using nlohmann::json;

TEST_CASE("every session event round-trips through JSON") {
  session_started_event started{"s1", "/work", "scripted:x", {"shell", "read"}, "/t.jsonl", 4};
  auto s2 = json(started).get<session_started_event>();
  CHECK(json(s2) == json(started));

  message m;
  m.id = "m";
  m.role = role::user;
  m.content = "hi";
  message_event me{"s1", m};
  auto me2 = json(me).get<message_event>();
  CHECK(me2.session_id == "s1");
  CHECK(me2.msg == m);

  notice_event n{"s1", "queue_overflow", "dropped"};
  CHECK(json(json(n).get<notice_event>()) == json(n));

  session_ended_event ended;
  ended.session_id = "s1";
  ended.reason = terminal_reason::max_turns;
  ended.error_message = "";
  ended.result_text = "done";
  ended.state.turn_count = 3;
  ended.usage.input_tokens = 10;
  ended.duration_ms = 42;
  agent_descriptor left;
  left.id = "agent_1a2b3c";
  left.description = "the long job";
  left.state = "stopped";
  ended.agents_left.push_back(left);
  auto e2 = json(ended).get<session_ended_event>();
  CHECK(json(e2) == json(ended));
  REQUIRE(e2.agents_left.size() == 1);
  CHECK(json(ended)["agents_left"][0]["agent_id"] == "agent_1a2b3c");
  CHECK(e2.state == ended.state);
  CHECK(e2.usage == ended.usage);
}
