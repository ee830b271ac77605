#include "actors/process_runner.hpp"

#include <caf/actor_system.hpp>
#include <caf/blocking_actor.hpp>

namespace troupe {

void run_child_detached(caf::actor_system& sys, started_child child, supervision how,
                        int control, std::function<void(child_end)> done) {
  sys.spawn<caf::detached>(
    [child, how = std::move(how), control, done = std::move(done)](caf::blocking_actor*) {
      done(supervise_child(child, how, control));
    });
}

} // namespace troupe
