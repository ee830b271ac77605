#pragma once
// The `scripted` provider: a model client that replays a script, for offline runs and tests.

#include "providers/scripted_script.hpp"
#include "protocol/interfaces.hpp"

namespace caf {
class actor_system;
}

namespace troupe {

/// Spawns a model client that answers the n-th request with the script's n-th line.
/// A request past the end gets an error reply naming the script, never a hang.
model_client_actor spawn_scripted_model(caf::actor_system& sys, script lines);

} // namespace troupe
