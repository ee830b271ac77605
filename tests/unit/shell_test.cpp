#include <doctest/doctest.h>

#include "tools/shell.hpp"
#include "tools/tool_spec.hpp"

using namespace troupe;
using nlohmann::json;

TEST_CASE("cap_output keeps head and tail and says how much was cut") {
  std::string text(100, 'a');
  text += std::string(100, 'b');
  CHECK(cap_output(text, 40));
  CHECK(text.rfind(std::string(20, 'a'), 0) == 0);
  CHECK(text.size() > 40);
  CHECK(text.find("160 bytes cut") != std::string::npos);
  CHECK(text.substr(text.size() - 20) == std::string(20, 'b'));
  std::string small = "short";
  CHECK_FALSE(cap_output(small, 40));
  CHECK(small == "short");
}

TEST_CASE("shell timeout comes from input seconds or the context") {
  tool_context ctx;
  ctx.shell_timeout = std::chrono::milliseconds{5000};
  CHECK(shell_timeout(json{{"command", "x"}}, ctx) == std::chrono::milliseconds{5000});
  CHECK(shell_timeout(json{{"command", "x"}, {"timeout", 1.5}}, ctx) ==
        std::chrono::milliseconds{1500});
  CHECK(shell_timeout(json{{"command", "x"}, {"timeout", -1}}, ctx) ==
        std::chrono::milliseconds{5000});
  CHECK(shell_timeout(json{{"command", "x"}, {"timeout", 1e19}}, ctx) ==
        std::chrono::hours{24});
}

TEST_CASE("shell_result marks non-zero exits, timeouts and interrupts as errors") {
  process_exit exit;
  exit.output = "out";
  exit.exit_code = 0;
  CHECK_FALSE(shell_result(exit, false, {}, false).is_error);
  exit.exit_code = 2;
  CHECK(shell_result(exit, false, {}, false).output == "out\n[exit code 2]");
  exit.exit_code = 137;
  auto timed_out = shell_result(exit, true, std::chrono::milliseconds{2500}, false);
  CHECK(timed_out.is_error);
  CHECK(timed_out.output.find("timed out after 2.5 s") != std::string::npos);
  CHECK(shell_result(exit, false, {}, true).output.find("interrupted") != std::string::npos);
}
