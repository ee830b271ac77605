// Per-call cost of the shell tool's process work, without the actors around it: a command
// (`true`) sent to the session's persistent bash and read back to its end marker, against a
// fresh `bash -c true` spawned and waited for per call (what a wrapper per command costs).
// The persistent shell is measured bare and inside the workspace-write sandbox (bubblewrap, no
// network), whose cost is paid when the shell starts, not per call: both are reported.
//
// Usage: bench_shell_calls [calls=500] [runs=3]

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench_support.hpp"
#include "tools/child_process.hpp"
#include "tools/sandbox.hpp"
#include "tools/shell.hpp"

extern char** environ;

using namespace troupe;
using namespace troupe::bench;

namespace {

const std::string bwrap = "/usr/bin/bwrap";

struct shell_cost {
  double start_ms = 0;
  double per_call_ms = 0;
};

shell_cost persistent_shell(int calls, bool sandboxed) {
  tool_context ctx;
  ctx.cwd = std::filesystem::current_path();
  if (sandboxed) {
    sandbox_settings walls;
    walls.mode = sandbox_mode::workspace_write;
    walls.bwrap = bwrap;
    ctx.sandbox = std::make_shared<const sandbox_policy>(walls, ctx.cwd);
  }
  auto started_at = clock_type::now();
  auto shell = start_shell(ctx, "benchnonce0123456");
  if (!shell) {
    std::fprintf(stderr, "%s\n", shell.error().c_str());
    std::exit(1);
  }
  // As the executor runs one: sent, then a copy of the pipe and a hold, supervised to the end
  // marker.
  auto run_true = [&] {
    if (!send_command(*shell, "true"))
      std::exit(1);
    auto control = child_control::make();
    int output_copy = fcntl(shell->output_fd, F_DUPFD_CLOEXEC, 0);
    if (!control || output_copy < 0)
      std::exit(1);
    auto end = supervise_child(started_child{shell->pid, -1, output_copy, -1},
                               command_supervision(*shell, 30000, std::chrono::seconds{2}),
                               control->second);
    if (end.exit_code != 0)
      std::exit(1);
  };
  run_true(); // the first command's end is when the shell is ready
  shell_cost cost;
  cost.start_ms =
    std::chrono::duration<double, std::milli>(clock_type::now() - started_at).count();
  auto start = clock_type::now();
  for (int i = 0; i < calls; ++i)
    run_true();
  auto ms = std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
  stop_shell(*shell, true);
  cost.per_call_ms = ms / calls;
  return cost;
}

double fresh_ms_per_call(int calls) {
  const char* argv[] = {"/bin/bash", "--noprofile", "--norc", "-c", "true", nullptr};
  auto start = clock_type::now();
  for (int i = 0; i < calls; ++i) {
    pid_t pid = -1;
    if (posix_spawn(&pid, argv[0], nullptr, nullptr, const_cast<char**>(argv), environ) != 0)
      std::exit(1);
    int status = 0;
    waitpid(pid, &status, 0);
  }
  return std::chrono::duration<double, std::milli>(clock_type::now() - start).count() / calls;
}

} // namespace

int main(int argc, char** argv) {
  int calls = argc > 1 ? std::atoi(argv[1]) : 500;
  int runs = argc > 2 ? std::atoi(argv[2]) : 3;
  bool sandbox = probe_sandbox(bwrap).works;
  std::vector<double> persistent, fresh, boxed, bare_start, boxed_start;
  for (int run = 0; run < runs; ++run) {
    auto bare = persistent_shell(calls, false);
    persistent.push_back(bare.per_call_ms);
    bare_start.push_back(bare.start_ms);
    if (sandbox) {
      auto walled = persistent_shell(calls, true);
      boxed.push_back(walled.per_call_ms);
      boxed_start.push_back(walled.start_ms);
    }
    fresh.push_back(fresh_ms_per_call(calls));
  }
  std::printf("shell call cost (`true`), %d calls per run, median of %d runs\n", calls, runs);
  std::printf("  persistent bash (troupe's shell tool): %6.3f ms/call\n", median(persistent));
  if (sandbox) {
    std::printf("  the same in the sandbox:               %6.3f ms/call (%+.3f ms)\n",
                median(boxed), median(boxed) - median(persistent));
    std::printf("  shell start to first command's end:    %6.3f ms bare, %6.3f ms sandboxed\n",
                median(bare_start), median(boxed_start));
  } else {
    std::printf("  the sandbox: not available here (%s)\n", probe_sandbox(bwrap).problem.c_str());
  }
  std::printf("  fresh `bash -c` per call:              %6.3f ms/call\n", median(fresh));
  return 0;
}
