#include "actors/runtime.hpp"

#include <algorithm>
#include <thread>

#include <caf/actor_system_config.hpp>

#include "protocol/registration.hpp"

namespace troupe {

void configure_actor_system(caf::actor_system_config& cfg) {
  register_protocol_types(cfg);
  // No network layer (CAF's middleman) is loaded: the control endpoint is a Unix socket of
  // troupe's own (actors/control_endpoint), and nothing else talks CAF across processes.

  // CAF's default is max(cores, 4) work-stealing workers. Each idle worker polls for work
  // (every 50 µs for a while, then every 10 ms), so on a two-core machine four of them take
  // time from the session's shell and the HTTP engine. One per core keeps the low hand-off
  // latency of stealing (a read-only step: ~100 µs, against ~160 µs with CAF's work-sharing
  // queue, which sleeps on a condition variable) without the extra pollers.
  cfg.set("scheduler.max-threads",
          static_cast<size_t>(std::max(2u, std::thread::hardware_concurrency())));
  // After its quick polls (100, no sleep) an idle worker waits on its condition variable, which
  // a message from outside the scheduler (the HTTP engine, a process reader) signals. CAF's
  // default first polls 500 more times with a 50 µs sleep between: each sleep is a wake-up
  // that takes the CPU from the session's bash and the model server, and a message arriving
  // during one waits for it to end. Measured on two cores: 1.5 ms per step instead of 1.9.
  cfg.set("work-stealing.moderate-poll-attempts", size_t{0});
}

} // namespace troupe
