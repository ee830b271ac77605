#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "protocol/loop_state.hpp"

using namespace troupe;
using nlohmann::json;

TEST_CASE("loop state round-trips through JSON") {
  loop_state s;
  s.messages_count = 12;
  s.turn_count = 2;
  s.step_count = 3;
  s.total_steps = 7;
  s.auto_compact = {true, 4, 1};
  s.max_output_recovery_count = 2;
  s.has_attempted_reactive_compact = true;
  s.stop_hook_active = true;
  s.transition = transition_reason::tool_round;
  CHECK(json(s).get<loop_state>() == s);
  CHECK(json(s)["transition_reason"] == "tool_round");
}

TEST_CASE("terminal reasons have stable names and exit codes") {
  struct row {
    terminal_reason reason;
    const char* name;
    int code;
  };
  for (auto r : {row{terminal_reason::completed, "completed", 0},
                 row{terminal_reason::max_turns, "max_turns", 3},
                 row{terminal_reason::interrupted, "interrupted", 130},
                 row{terminal_reason::permission_blocked, "permission_blocked", 4},
                 row{terminal_reason::error, "error", 1},
                 row{terminal_reason::backgrounded, "backgrounded", 0},
                 row{terminal_reason::max_budget, "max_budget", 1},
                 row{terminal_reason::hook_stopped, "hook_stopped", 5}}) {
    CHECK(json(r.reason) == r.name);
    CHECK(json(r.name).get<terminal_reason>() == r.reason);
    CHECK(exit_code_for(r.reason) == r.code);
  }
  CHECK_THROWS(json("finished").get<terminal_reason>());
}
