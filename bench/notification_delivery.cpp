// Lost wake-ups: one parent session, CHILDREN background subagents that finish at random times
// (0–2 s) while the parent alternates between busy steps (a 20 ms shell call) and idling, plus
// EXTERNAL `troupe notify` calls from 4 other processes at once. Every notification must reach
// the parent's loop exactly once; reports the latency from send to the loop taking it (p50/p99),
// in-process (subagents) and from other processes (notify), and the interrupt latency: from an
// interrupt sent to a session mid-generation / mid-tool to its terminal event.
// Usage: bench_notification_delivery TROUPE_BINARY [CHILDREN] [EXTERNAL]

#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <caf/actor_system_config.hpp>

#include "actors/control_endpoint.hpp"
#include "actors/disk_io.hpp"
#include "store/ids.hpp"
#include "actors/runtime.hpp"
#include "bench_support.hpp"

using namespace troupe;
using troupe::bench::clock_type;

namespace {

scripted_reply text(std::string t, int64_t delay_ms = 0) {
  scripted_reply r;
  r.text = std::move(t);
  r.delay_ms = delay_ms;
  return r;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

pid_t spawn_notifier(const std::string& binary, const std::filesystem::path& home,
                     const std::string& session, int index, size_t count) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("TROUPE_HOME", home.c_str(), 1);
    auto loop = "for i in $(seq 1 " + std::to_string(count) + "); do \"" + binary +
                "\" notify " + session + " \"ext-" + std::to_string(index) +
                "-$i\" > /dev/null || echo 'notify failed' >&2; done";
    ::execl("/bin/bash", "bash", "-c", loop.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

struct delivery_result {
  size_t unique = 0;
  size_t duplicates = 0;
  std::vector<double> in_process_ms;
  std::vector<double> external_ms;
};

delivery_result read_deliveries(const std::filesystem::path& transcript) {
  delivery_result result;
  std::set<std::string> seen;
  std::ifstream in{transcript};
  std::string line;
  while (std::getline(in, line)) {
    auto m = nlohmann::json::parse(line, nullptr, false);
    if (!m.is_object() || m.value("origin", "") != "task-notification")
      continue;
    if (!seen.insert(m.value("id", "")).second) {
      ++result.duplicates;
      continue;
    }
    auto meta = m["meta"];
    double ms = static_cast<double>(meta.value("received_at_us", int64_t{0}) -
                                    meta.value("sent_at_us", int64_t{0})) /
                1000.0;
    (meta.value("source", "") == "external" ? result.external_ms : result.in_process_ms)
      .push_back(ms);
  }
  result.unique = seen.size();
  return result;
}

void lost_wakeups(const std::string& binary, size_t children, size_t external) {
  auto root = std::filesystem::temp_directory_path() / ("troupe-bench-notify-" + random_hex(6));
  auto home = root / "home";
  std::filesystem::create_directories(root / "work");
  caf::actor_system_config cfg;
  configure_actor_system(cfg);
  caf::actor_system sys{cfg};

  std::mt19937 random{42};
  std::uniform_int_distribution<int64_t> finish_ms{0, 2000};
  std::map<std::string, int64_t> delays;
  script parent;
  parent.source = "bench parent";
  scripted_reply launch;
  for (size_t i = 0; i < children; ++i) {
    auto name = "child-" + std::to_string(i);
    delays[name] = finish_ms(random);
    launch.tool_calls.push_back({"", "task",
                                 {{"prompt", "work"}, {"mode", "background"},
                                  {"model", "scripted:" + name}},
                                 call_format::native});
  }
  parent.replies.push_back(launch);
  // Then busy (a 20 ms command) and idle (a reply that ends the turn), in turn.
  for (int i = 0; i < 6000; ++i) {
    auto busy = text("");
    busy.tool_calls.push_back({"", "shell", {{"command", "sleep 0.02"}}, call_format::native});
    parent.replies.push_back(i % 2 == 0 ? busy : text("idle"));
  }

  auto registry = std::make_shared<const tool_registry>(make_builtin_registry());
  session_config config;
  config.session_id = "bench-parent";
  config.session_dir = session_paths::top_level(home, config.session_id).dir();
  config.cwd = root / "work";
  config.model_name = "scripted:bench";
  config.registry = registry;
  config.interactive = true;
  config.max_children = children;
  config.initial_inputs.push_back(make_input("launch them all"));
  config.disk = spawn_disk_io(sys); // one for the process, as troupe run has
  tool_context tools;
  tools.cwd = config.cwd;
  auto factory = [&](caf::actor_system& system, const subagent_launch& l,
                     agent_parent_actor parent_actor) -> expected<session_actor> {
    script lines;
    lines.source = l.model;
    lines.replies.push_back(text("done", delays[l.model.substr(9)]));
    session_config child;
    child.session_id = l.agent_id;
    child.session_dir = l.session_dir;
    child.cwd = config.cwd;
    child.model_name = l.model;
    child.registry = registry;
    child.depth = l.depth;
    child.parent = parent_actor;
    child.parent_queue = config.paths().queue();
    child.disk = config.disk;
    child.initial_inputs.push_back(make_input(l.prompt, message_origin::parent));
    return spawn_agent(system, std::move(child), tools, spawn_scripted_model(system, lines));
  };
  config.spawn_subagent = factory;
  std::promise<terminal_reason> done;
  config.subscribers.push_back(sys.spawn(bench::end_sink, &done, terminal_reason::completed));
  auto session = spawn_agent(sys, config, tools, spawn_scripted_model(sys, parent));
  caf::anon_send(session, start_atom::value);
  auto transcript = config.paths().transcript();
  while (!std::filesystem::exists(transcript))
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  auto endpoint = spawn_control_endpoint(sys, session, config.paths());
  if (!endpoint) {
    std::fprintf(stderr, "%s\n", endpoint.error().c_str());
    return;
  }
  auto start = clock_type::now();
  std::vector<pid_t> notifiers;
  for (int p = 0; p < 4; ++p)
    notifiers.push_back(spawn_notifier(binary, home, config.session_id, p, external / 4));
  for (auto pid : notifiers)
    ::waitpid(pid, nullptr, 0);
  delivery_result result;
  for (int i = 0; i < 3000; ++i) {
    result = read_deliveries(transcript);
    if (result.unique >= children + external)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
  std::chrono::duration<double> elapsed = clock_type::now() - start;
  caf::anon_send(session, submit_atom::value, make_input("/exit"));
  done.get_future().wait();
  std::printf("lost wake-ups: %zu subagents + %zu notifies from 4 processes in %.1f s: "
              "%zu/%zu delivered, %zu duplicates\n",
              children, external, elapsed.count(), result.unique, children + external,
              result.duplicates);
  std::printf("  latency send -> parent loop: in-process p50 %.2f ms p99 %.2f ms (%zu) | "
              "other processes p50 %.2f ms p99 %.2f ms (%zu)\n",
              percentile(result.in_process_ms, 0.5), percentile(result.in_process_ms, 0.99),
              result.in_process_ms.size(), percentile(result.external_ms, 0.5),
              percentile(result.external_ms, 0.99), result.external_ms.size());
  std::error_code ignored; // the control endpoint may be removing its file meanwhile
  std::filesystem::remove_all(root, ignored);
}

// From an interrupt sent to a session (as the CLI's signal thread does) to its terminal event.
void interrupt_latency(size_t rounds) {
  auto root = std::filesystem::temp_directory_path() / ("troupe-bench-intr-" + random_hex(6));
  std::filesystem::create_directories(root / "work");
  caf::actor_system_config cfg;
  configure_actor_system(cfg);
  caf::actor_system sys{cfg};
  auto registry = std::make_shared<const tool_registry>(make_builtin_registry());
  for (std::string where : {"generation", "tool"}) {
    std::vector<double> ms;
    for (size_t i = 0; i < rounds; ++i) {
      script lines;
      lines.source = "bench";
      if (where == "generation") {
        lines.replies.push_back(text("slow", 60000));
      } else {
        auto call = text("");
        call.tool_calls.push_back({"", "shell", {{"command", "sleep 60"}}, call_format::native});
        lines.replies.push_back(call);
      }
      session_config config;
      config.session_id = "intr-" + std::to_string(i) + where;
      config.session_dir = root / config.session_id;
      config.cwd = root / "work";
      config.registry = registry;
      config.initial_inputs.push_back(make_input("go"));
      std::promise<terminal_reason> done;
      auto ended = done.get_future();
      config.subscribers.push_back(
        sys.spawn(bench::end_sink, &done, terminal_reason::interrupted));
      // Interrupt once the call is under way: after the step.pre hook (plus 30 ms for the
      // tool case, so the command runs).
      auto stepping = std::make_shared<std::promise<void>>();
      config.hooks.emplace_back(hook_point::step_pre, [stepping](const hook_context&) {
        stepping->set_value();
        return std::vector<message>{};
      });
      tool_context tools;
      tools.cwd = config.cwd;
      auto session = spawn_agent(sys, config, tools, spawn_scripted_model(sys, lines));
      caf::anon_send(session, start_atom::value);
      stepping->get_future().wait();
      std::this_thread::sleep_for(std::chrono::milliseconds{where == "tool" ? 30 : 5});
      auto sent = clock_type::now();
      caf::anon_send<caf::message_priority::high>(session, interrupt_atom::value);
      ended.wait();
      std::chrono::duration<double, std::milli> took = clock_type::now() - sent;
      ms.push_back(took.count());
    }
    std::printf("interrupt -> terminal event, mid-%s: p50 %.2f ms p99 %.2f ms (%zu runs)\n",
                where.c_str(), percentile(ms, 0.5), percentile(ms, 0.99), ms.size());
  }
  std::error_code ignored; // the control endpoint may be removing its file meanwhile
  std::filesystem::remove_all(root, ignored);
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s TROUPE_BINARY [CHILDREN] [EXTERNAL]\n", argv[0]);
    return 2;
  }
  size_t children = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 100;
  size_t external = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 1000;
  lost_wakeups(argv[1], children, external);
  interrupt_latency(50);
  return 0;
}
