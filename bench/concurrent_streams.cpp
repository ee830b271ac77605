// One process, many streaming generations at once through the one HTTP engine.
//
// Starts N HTTP model clients (OpenAI wire format) against the fake model server given on the
// command line, sends each one generation at the same moment, and waits for all replies.
// Reports wall time per round, process CPU time, the engine's thread count, and peak RSS.
//
// Usage: bench_concurrent_streams PORT [clients=1000] [rounds=3]
//        (bench/run_all.sh starts bench_stream_server with 200 ms of latency for it)

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <future>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

#include "actors/http_engine.hpp"
#include "actors/http_model.hpp"
#include "actors/runtime.hpp"

using namespace troupe;
using clock_type = std::chrono::steady_clock;

namespace {

double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](timeval t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

int thread_count() {
  int n = 0;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (auto* entry = readdir(dir))
      n += entry->d_name[0] != '.';
    closedir(dir);
  }
  return n;
}

struct round_result {
  int ok = 0;
  int failed = 0;
  std::string first_error;
};

// Fires one generation at every client and collects the replies.
caf::behavior driver(caf::event_based_actor* self, std::vector<model_client_actor> clients,
                     std::promise<round_result>* done) {
  auto result = std::make_shared<round_result>();
  auto pending = std::make_shared<size_t>(clients.size());
  model_request request;
  message prompt;
  prompt.role = role::user;
  prompt.content = "stream something";
  request.context.messages.push_back(std::make_shared<const message>(prompt));
  for (auto& client : clients)
    self->request(client, caf::infinite, generate_atom::value, request)
      .then([=](model_reply& reply) {
        if (reply.ok() && !reply.assistant.content.empty()) {
          ++result->ok;
        } else {
          ++result->failed;
          if (result->first_error.empty())
            result->first_error = reply.error_message;
        }
        if (--*pending == 0) {
          done->set_value(*result);
          self->quit();
        }
      });
  // Text deltas come to the requester too; this benchmark only counts whole replies.
  return {[](generation_progress&) {}};
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PORT [clients=1000] [rounds=3]\n", argv[0]);
    return 2;
  }
  std::string port = argv[1];
  int clients = argc > 2 ? std::atoi(argv[2]) : 1000;
  int rounds = argc > 3 ? std::atoi(argv[3]) : 3;
  caf::actor_system_config cfg;
  configure_actor_system(cfg);
  caf::actor_system sys{cfg};
  auto started = http_engine::start(sys, "libcurl.so.4");
  if (!started) {
    std::fprintf(stderr, "%s\n", started.error().c_str());
    return 1;
  }
  auto engine = *started;

  http_model_config config;
  config.provider.kind = provider_kind::openai;
  config.provider.model = "bench";
  config.provider.base_url = "http://127.0.0.1:" + port + "/v1";
  config.provider.api_key = "bench";
  config.max_retries = 0;
  std::vector<model_client_actor> models;
  for (int i = 0; i < clients; ++i)
    models.push_back(spawn_http_model(sys, config, engine));

  std::printf("%d concurrent streaming generations per round, one HTTP engine thread\n", clients);
  for (int round = 0; round < rounds; ++round) {
    std::promise<round_result> done;
    auto future = done.get_future();
    auto cpu_before = cpu_seconds();
    auto start = clock_type::now();
    sys.spawn(driver, models, &done);
    auto result = future.get();
    auto wall = std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
    std::printf("  round %d: %d ok, %d failed, wall %.0f ms, CPU %.0f ms, %d threads%s%s\n",
                round + 1, result.ok, result.failed, wall, (cpu_seconds() - cpu_before) * 1000,
                thread_count(), result.first_error.empty() ? "" : ", first error: ",
                result.first_error.c_str());
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("  peak RSS: %.1f MiB\n", static_cast<double>(usage.ru_maxrss) / 1024.0);
  for (auto& m : models)
    caf::anon_send_exit(m, caf::exit_reason::user_shutdown);
  engine.stop();
  return 0;
}
