#include <doctest/doctest.h>

#include <unistd.h>

#include "orchestrator/permission_prompt.hpp"

using namespace troupe;

namespace {

// Answers the prompt with `typed` through pipes; returns the answer and what was shown.
std::pair<permission_answer, std::string> answer(const std::string& typed) {
  int in[2], out[2];
  REQUIRE(pipe(in) == 0);
  REQUIRE(pipe(out) == 0);
  REQUIRE(write(in[1], typed.data(), typed.size()) == static_cast<ssize_t>(typed.size()));
  close(in[1]);
  tool_call call{"c1", "shell", {{"command", "make install"}}, call_format::native};
  auto result = ask_permission(in[0], out[1], call, "shell needs approval");
  close(out[1]);
  std::string shown;
  char buffer[4096];
  for (ssize_t n; (n = read(out[0], buffer, sizeof buffer)) > 0;)
    shown.append(buffer, static_cast<size_t>(n));
  close(in[0]);
  close(out[0]);
  return {result, shown};
}

} // namespace

TEST_CASE("the terminal prompt shows the call and reads y, n or always") {
  auto [yes, shown] = answer("y\n");
  CHECK(yes == permission_answer::yes);
  CHECK(shown.find("shell needs approval") != std::string::npos);
  CHECK(shown.find("shell: make install") != std::string::npos);
  CHECK(answer("No\n").first == permission_answer::no);
  CHECK(answer(" A \n").first == permission_answer::always);
  auto [again, asked_twice] = answer("maybe\nyes\n");
  CHECK(again == permission_answer::yes);
  CHECK(asked_twice.find("Allow?") != asked_twice.rfind("Allow?"));
  CHECK(answer("").first == permission_answer::no); // end of input declines
}

TEST_CASE("a permission question shows the call in printable form") {
  CHECK(describe_call({"c1", "shell", {{"command", "echo \033]0;PWNED\007 done"}},
                       call_format::native}) == "shell: echo ^[]0;PWNED^G done");
  CHECK(describe_call({"c2", "write", {{"path", "x\033[2J.txt"}, {"content", "a"}},
                       call_format::native}) == "write x^[[2J.txt");
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  int in[2];
  REQUIRE(::pipe(in) == 0);
  REQUIRE(::write(in[1], "n\n", 2) == 2);
  auto answer = ask_permission(in[0], fds[1], {"c3", "edit", {{"x", 1}}, call_format::native},
                               "edit would change /w/\033]0;T\007");
  CHECK(answer == permission_answer::no);
  ::close(fds[1]);
  char buffer[512];
  auto n = ::read(fds[0], buffer, sizeof buffer);
  REQUIRE(n > 0);
  std::string shown{buffer, static_cast<size_t>(n)};
  CHECK(shown.find('\033') == std::string::npos);
  CHECK(shown.find("/w/^[]0;T^G") != std::string::npos);
  for (int fd : {fds[0], in[0], in[1]})
    ::close(fd);
}
