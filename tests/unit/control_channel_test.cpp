// The control channel's wire format, addresses and control file (store/control_channel).

#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include "store/control_channel.hpp"
#include "support/test_support.hpp"

using namespace troupe;
using namespace troupe::test;

TEST_CASE("a control request goes out as one JSON line and comes back whole") {
  auto line = control_request_line("t0k", control_command::background, "agents/a\nb");
  REQUIRE(line.back() == '\n');
  CHECK(line.find('\n') == line.size() - 1); // a newline in the argument is escaped
  auto parsed = parse_control_request(line.substr(0, line.size() - 1));
  REQUIRE(parsed);
  CHECK(parsed->token == "t0k");
  CHECK(parsed->command == control_command::background);
  CHECK(line.find(R"("command":"background")") != std::string::npos);
  CHECK(parsed->arg == "agents/a\nb");
  auto no_arg = parse_control_request(R"({"token": "t", "command": "poke"})");
  REQUIRE(no_arg);
  CHECK(no_arg->command == control_command::poke);
  CHECK(no_arg->arg.empty());
}

TEST_CASE("a request with a command that has no spelling is refused at the edge") {
  auto parsed = parse_control_request(R"({"token": "t", "command": "frobnicate"})");
  REQUIRE(!parsed);
  CHECK(parsed.error().find("unknown control command 'frobnicate'") != std::string::npos);
  // Spellings are exact: no case folding, no underscores for dashes.
  CHECK(!parse_control_request(R"({"token": "t", "command": "Poke"})"));
  CHECK(!parse_control_request(R"({"token": "t", "command": "interrupt_agent"})"));
}

TEST_CASE("the socket refuses what only the session's own client may say") {
  // A tool process that reaches the socket must not raise its own permissions or swap models.
  for (const char* command : {"permission-mode", "end-input", "model", "stop-task", "context-usage"}) {
    CAPTURE(command);
    auto parsed = parse_control_request(std::string{R"({"token": "t", "command": ")"} + command +
                                         R"(", "arg": "bypass"})");
    REQUIRE(!parsed);
    CHECK(parsed.error().find("own client only") != std::string::npos);
  }
}

TEST_CASE("anything but a request object is refused with a reason") {
  std::vector<std::string> bad_lines{
    "", "garbage", "\x16\x03\x01", "[1, 2]", R"({"token": 1, "command": "poke"})",
    R"({"token": "t"})", R"({"token": "t", "command": "poke", "arg": 5})", std::string(1000, '[')};
  for (const auto& bad : bad_lines) {
    INFO(bad);
    auto parsed = parse_control_request(bad);
    CHECK(!parsed);
  }
}

TEST_CASE("a socket too deep for an address is reached through its directory's descriptor") {
  temp_dir dir;
  auto shallow = control_socket_address(dir.path(), "control.sock", 7);
  REQUIRE(shallow);
  CHECK(std::string{shallow->sun_path} == (dir / "control.sock").string());
  auto deep = dir / std::string(120, 'd');
  auto far = control_socket_address(deep, "control.sock", 7);
  REQUIRE(far);
  CHECK(std::string{far->sun_path} == "/proc/self/fd/7/control.sock");
  CHECK(!control_socket_address(dir.path(), "../elsewhere.sock", 7));
  CHECK(!control_socket_address(dir.path(), "", 7));
}

TEST_CASE("control.json: missing, unreadable and foreign files say what is wrong") {
  temp_dir dir;
  auto missing = read_control_file(session_paths{dir.path()});
  REQUIRE(!missing);
  CHECK(missing.error().find("is missing") != std::string::npos);
  write_file(dir / "control.json", R"({"port": 4242, "token": "t", "pid": 1})");
  auto old = read_control_file(session_paths{dir.path()});
  REQUIRE(!old);
  CHECK(old.error().find("names no socket") != std::string::npos);
  write_file(dir / "control.json", R"({"socket": "control.sock", "token": "t", "pid": 1})");
  auto good = read_control_file(session_paths{dir.path()});
  REQUIRE(good);
  CHECK(good->socket == "control.sock");
  CHECK(good->token == "t");
  CHECK(good->pid == 1);
  // A pid of another type or out of range names no process; it never throws or converts.
  for (auto pid : {R"("x")", "1e300", "-1e30", "[1]", "1.5"}) {
    CAPTURE(pid);
    write_file(dir / "control.json",
               std::string{R"({"socket": "control.sock", "token": "t", "pid": )"} + pid + "}");
    expected<control_file> odd = failure{"not read"};
    CHECK_NOTHROW(odd = read_control_file(session_paths{dir.path()}));
    REQUIRE(odd);
    CHECK(odd->pid == 0);
  }
}
