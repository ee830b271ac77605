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

#include "actors/agent.hpp"
#include "actors/scripted_model.hpp"
#include "actors/runtime.hpp"

using namespace troupe;
using clock_type = std::chrono::steady_clock;

namespace {

struct end_state {
  std::promise<terminal_reason>* done = nullptr;
};

event_sink_actor::behavior_type end_sink(event_sink_actor::stateful_pointer<end_state> self,
                                         std::promise<terminal_reason>* done) {
  self->state.done = done;
  return {
    [=](const session_started_event&) {},
    [=](const message_event&) {},
    [=](const notice_event&) {},
    [=](const generation_progress&) {},
    [=](const session_ended_event& e) {
      if (e.reason != terminal_reason::completed)
        std::fprintf(stderr, "run ended %s: %s\n", to_string(e.reason), e.error_message.c_str());
      self->state.done->set_value(e.reason);
      self->quit();
    },
  };
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

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
  script lines;
  lines.source = "bench";
  for (int i = 0; i < steps; ++i) {
    scripted_reply r;
    r.text = "reading";
    if (tool == "shell")
      r.tool_calls.push_back({"", "shell", {{"command", "true"}}, call_format::native});
    else
      r.tool_calls.push_back({"", "read", {{"path", "small.txt"}}, call_format::native});
    lines.replies.push_back(std::move(r));
  }
  scripted_reply last;
  last.text = "done";
  lines.replies.push_back(last);

  session_config config;
  config.session_id = "bench-" + std::to_string(run);
  config.session_dir = root / "home" / config.session_id;
  config.cwd = work;
  config.model_name = "scripted:bench";
  config.registry = std::make_shared<const tool_registry>(make_builtin_registry());
  config.initial_inputs.push_back(make_input("read the file many times"));
  auto stamps = std::make_shared<std::vector<clock_type::time_point>>();
  stamps->reserve(static_cast<size_t>(steps) + 2);
  config.hooks.emplace_back(hook_point::step_pre, [stamps](const hook_context&) {
    stamps->push_back(clock_type::now());
    return std::vector<message>{};
  });
  std::promise<terminal_reason> done;
  auto future = done.get_future();
  config.subscribers.push_back(sys.spawn(end_sink, &done));
  tool_context tools;
  tools.cwd = work;
  auto model = spawn_scripted_model(sys, std::move(lines));
  auto session = spawn_agent(sys, std::move(config), std::move(tools), std::move(model));
  caf::anon_send(session, start_atom::value);
  future.get(); // the session has ended: nobody writes `stamps` any more
  return *stamps;
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
