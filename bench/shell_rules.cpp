// Cost of judging one shell command line against the permission rules: parsing, normalising
// and matching every part of a 200-character pipeline (the requirement: at most 50 µs).
//
// Usage: bench_shell_rules [calls=20000]

#include <cstdio>
#include <cstdlib>

#include "bench_support.hpp"
#include "tools/permissions.hpp"
#include "tools/shell.hpp"

using namespace troupe;
using namespace troupe::bench;

int main(int argc, char** argv) {
  int calls = argc > 1 ? std::atoi(argv[1]) : 20000;
  permission_policy policy;
  policy.context.cwd = "/work/project";
  policy.context.home = "/home/me";
  for (auto text : {"shell(git status *)", "shell(ls *)", "shell(grep *)", "shell(wc *)",
                    "shell(sort *)", "shell(head *)", "write(out/**)"})
    policy.rules.allow.push_back(*parse_permission_rule(text));
  for (auto text : {"shell(rm *)", "shell(git push *)", "write(/etc/**)"})
    policy.rules.deny.push_back(*parse_permission_rule(text));
  auto shell = shell_tool();
  nlohmann::json input = {
    {"command", "git status --short && ls -la src/tools | grep -v '\\.o$' | sort -k5 -n | "
                "head -n 20 | wc -l 2>&1; grep -c x README.md && grep -rn \"TODO\" src --include=*.cpp | "
                "sort | head -50 | wc -l; ls -1 src/actors | wc -l"}};
  auto length = input["command"].get<std::string>().size();
  int allowed = 0;
  auto start = clock_type::now();
  for (int i = 0; i < calls; ++i)
    allowed += policy.can_use_tool(shell, input).outcome == permission_outcome::allow;
  auto us = std::chrono::duration<double, std::micro>(clock_type::now() - start).count();
  std::printf("shell rule check, %zu-character pipeline: %.2f us per call (%d of %d allowed)\n",
              length, us / calls, allowed, calls);
  return allowed == calls ? 0 : 1;
}
