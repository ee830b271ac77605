#pragma once
// The provider gate: one per HTTP engine (so one per process), shared by every HTTP model
// client that sends through it. A provider's 429/529 back-off holds every client's next request.

#include "protocol/interfaces.hpp"

namespace caf {
class actor_system;
}

namespace troupe {

provider_gate_actor spawn_provider_gate(caf::actor_system& sys);

} // namespace troupe
