// The control sub-protocol's spellings and reply lines (protocol/control.cpp).

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "protocol/control.hpp"

using namespace troupe;
using nlohmann::json;

TEST_CASE("every control command has one spelling that reads back as itself") {
  struct row {
    control_command command;
    const char* name;
  };
  for (auto [command, name] : {row{control_command::poke, "poke"},
                               row{control_command::urgent, "urgent"},
                               row{control_command::interrupt, "interrupt"},
                               row{control_command::detach, "detach"},
                               row{control_command::input, "input"},
                               row{control_command::background, "background"},
                               row{control_command::interrupt_agent, "interrupt-agent"},
                               row{control_command::notify_agent, "notify-agent"}}) {
    CAPTURE(name);
    CHECK(std::string{to_string(command)} == name);
    auto parsed = parse_control_command(name);
    REQUIRE(parsed);
    CHECK(*parsed == command);
    CHECK(json(command) == name);
    CHECK(json(name).get<control_command>() == command);
  }
}

TEST_CASE("an unknown control command is an error that names it and the known ones") {
  for (const char* bad : {"", "Poke", "interrupt_agent", "notify", "poke "}) {
    CAPTURE(bad);
    auto parsed = parse_control_command(bad);
    REQUIRE(!parsed);
    CHECK(parsed.error() ==
          std::string{"unknown control command '"} + bad +
            "'; known: poke, urgent, interrupt, detach, input, background, interrupt-agent, "
            "notify-agent, end-input, permission-mode, model, stop-task, context-usage");
    CHECK_THROWS_AS(json(bad).get<control_command>(), json::exception);
  }
}

TEST_CASE("a control reply goes out as the answer line it always was and reads back whole") {
  struct row {
    control_reply reply;
    const char* line;
  };
  for (const auto& [reply, line] :
       {row{control_ok("delivered 2 notification(s)"), "delivered 2 notification(s)"},
        row{control_ok("queued"), "queued"},
        row{control_error("the agent has ended"), "error: the agent has ended"},
        row{control_reply{control_status::refused, "wrong token"}, "refused: wrong token"}}) {
    CAPTURE(line);
    CHECK(to_line(reply) == line);
    CHECK(parse_control_reply(line) == reply);
  }
  // Only the exact prefixes mark a status: text that merely begins alike is ok.
  CHECK(parse_control_reply("errors: none") == control_ok("errors: none"));
  CHECK(parse_control_reply("refusedx") == control_ok("refusedx"));
}
