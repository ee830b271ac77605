#pragma once
// What the in-process benchmarks share: running one scripted session to its end, and medians.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/agent.hpp"
#include "actors/scripted_model.hpp"

namespace troupe::bench {

using clock_type = std::chrono::steady_clock;

/// The mean time of `repeats` calls of `work`, in microseconds.
inline double microseconds_per(size_t repeats, const std::function<void()>& work) {
  auto start = clock_type::now();
  for (size_t i = 0; i < repeats; ++i)
    work();
  std::chrono::duration<double, std::micro> elapsed = clock_type::now() - start;
  return elapsed.count() / static_cast<double>(repeats);
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct end_state {
  std::promise<terminal_reason>* done = nullptr;
};

inline event_sink_actor::behavior_type
end_sink(event_sink_actor::stateful_pointer<end_state> self, std::promise<terminal_reason>* done,
         terminal_reason expected = terminal_reason::completed) {
  self->state.done = done;
  return {
    [=](const session_started_event&) {},
    [=](const message_event&) {},
    [=](const notice_event&) {},
    [=](const generation_progress&) {},
    [=](const session_status_event&) {},
    [=](const hook_run_event&) {},
    [=](const turn_ended_event&) {},
    [=](const session_ended_event& e) {
      if (e.reason != expected)
        std::fprintf(stderr, "run ended %s: %s\n", to_string(e.reason), e.error_message.c_str());
      self->state.done->set_value(e.reason);
      self->quit();
    },
  };
}

/// Runs one session over `replies` in `work` and returns when each step started (stamped by
/// a step.pre hook inside the session, so a slow subscriber cannot skew them).
inline std::vector<clock_type::time_point>
run_scripted(caf::actor_system& sys, const std::filesystem::path& home,
             const std::filesystem::path& work, std::vector<scripted_reply> replies,
             const std::string& id, size_t max_parallel_tools = 10) {
  script lines;
  lines.source = "bench";
  lines.replies = std::move(replies);
  session_config config;
  config.session_id = id;
  config.session_dir = home / id;
  config.cwd = work;
  config.model_name = "scripted:bench";
  config.registry = std::make_shared<const tool_registry>(make_builtin_registry());
  config.max_parallel_tools = max_parallel_tools;
  config.initial_inputs.push_back(make_input("benchmark"));
  auto stamps = std::make_shared<std::vector<clock_type::time_point>>();
  stamps->reserve(lines.replies.size() + 1);
  config.hooks.emplace_back(hook_point::step_pre, [stamps](const hook_context&) {
    stamps->push_back(clock_type::now());
    return std::vector<message>{};
  });
  std::promise<terminal_reason> done;
  auto future = done.get_future();
  config.subscribers.push_back(sys.spawn(end_sink, &done, terminal_reason::completed));
  tool_context tools;
  tools.cwd = work;
  auto model = spawn_scripted_model(sys, std::move(lines));
  auto session = spawn_agent(sys, std::move(config), std::move(tools), std::move(model));
  caf::anon_send(session, start_atom::value);
  future.get(); // the session has ended: nobody writes `stamps` any more
  return *stamps;
}

} // namespace troupe::bench
