// Runtime overhead per step: one session, scripted replies that each call `read` on a small
// file (no process, almost no I/O), so what is measured is troupe's own work per step:
// messages between actors, transcript appends, state writes, context snapshots.
// Each step's start is stamped by a step.pre hook, inside the session, so the numbers do not
// depend on when a subscriber gets around to reading its mailbox.
//
// Usage: bench_step_overhead [steps=1000] [runs=3] [scheduler threads=0 (CAF's default)]
//                            [tool=read|shell]  (shell runs `true` in a real bash child)

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <nlohmann/json.hpp>

#include "actors/runtime.hpp"
#include "bench_support.hpp"

using namespace troupe;
using namespace troupe::bench;

namespace {

// Mean microseconds per step over steps [first, last).
double us_per_step(const std::vector<clock_type::time_point>& t, size_t first, size_t last) {
  last = std::min(last, t.size() - 1);
  return std::chrono::duration<double, std::micro>(t[last] - t[first]).count() /
         static_cast<double>(last - first);
}

std::vector<clock_type::time_point> run_once(caf::actor_system& sys,
                                             const std::filesystem::path& root, int steps,
                                             int run, const std::string& tool) {
  auto work = root / "work";
  std::filesystem::create_directories(work);
  {
    std::FILE* f = std::fopen((work / "small.txt").c_str(), "w");
    std::fputs("one\ntwo\nthree\n", f);
    std::fclose(f);
  }
  std::vector<scripted_reply> replies;
  for (int i = 0; i < steps; ++i) {
    scripted_reply r;
    r.text = "reading";
    if (tool == "shell")
      r.tool_calls.push_back({"", "shell", {{"command", "true"}}, call_format::native});
    else
      r.tool_calls.push_back({"", "read", {{"path", "small.txt"}}, call_format::native});
    replies.push_back(std::move(r));
  }
  scripted_reply last;
  last.text = "done";
  replies.push_back(last);
  return run_scripted(sys, root / "home", work, std::move(replies),
                      "bench-" + std::to_string(run));
}

} // namespace

int main(int argc, char** argv) {
  int steps = argc > 1 ? std::atoi(argv[1]) : 1000;
  int runs = argc > 2 ? std::atoi(argv[2]) : 3;
  int threads = argc > 3 ? std::atoi(argv[3]) : 0;
  std::string tool = argc > 4 ? argv[4] : "read";
  caf::actor_system_config cfg;
  configure_actor_system(cfg);
  if (threads > 0)
    cfg.set("scheduler.max-threads", static_cast<size_t>(threads));
  caf::actor_system sys{cfg};
  char root_template[] = "/tmp/troupe-bench-XXXXXX";
  std::filesystem::path root = mkdtemp(root_template);

  // Step k starts with about 2k messages of history (the reply and its tool result).
  struct window {
    size_t first, last;
  };
  std::vector<window> windows = {{0, 10}, {0, 100}, {45, 55}, {450, 550}, {900, 1000}};
  std::vector<std::vector<double>> at(windows.size());
  std::vector<double> overall;
  for (int run = 0; run < runs; ++run) {
    auto t = run_once(sys, root / std::to_string(run), steps, run, tool);
    if (t.size() < 2)
      return 1;
    overall.push_back(std::chrono::duration<double, std::micro>(t.back() - t.front()).count() /
                      static_cast<double>(t.size() - 1));
    for (size_t i = 0; i < windows.size(); ++i)
      if (windows[i].first + 1 < t.size())
        at[i].push_back(us_per_step(t, windows[i].first, windows[i].last));
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("step overhead, %d steps per run, median of %d runs, tool: %s\n", steps, runs,
              tool == "shell" ? "shell `true` (a bash child per step)" : "read (no child process)");
  std::printf("  mean over the whole run: %8.1f us/step\n", median(overall));
  for (size_t i = 0; i < windows.size(); ++i)
    if (!at[i].empty())
      std::printf("  steps %4zu-%4zu (%4zu-%4zu messages of history): %8.1f us/step\n",
                  windows[i].first, windows[i].last, 2 * windows[i].first + 1,
                  2 * windows[i].last + 1, median(at[i]));
  std::printf("  peak RSS: %.1f MiB\n", static_cast<double>(usage.ru_maxrss) / 1024.0);
  std::filesystem::remove_all(root);
  return 0;
}
