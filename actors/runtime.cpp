#include "actors/runtime.hpp"

#include <algorithm>
#include <thread>

#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>

#include "protocol/registration.hpp"

namespace troupe {

void configure_actor_system(caf::actor_system_config& cfg) {
  register_protocol_types(cfg);
  // CAF's default work-stealing workers poll an empty queue every 50 µs for a while before
  // they sleep. An agent is idle most of the time (waiting on the model or a tool), so on a
  // small machine those wake-ups take the cores the shell and the HTTP engine need. The
  // work-sharing queue sleeps on a condition variable instead.
  cfg.set("scheduler.policy", caf::atom("sharing"));
  cfg.set("scheduler.max-threads",
          static_cast<size_t>(std::max(2u, std::thread::hardware_concurrency())));
}

} // namespace troupe
