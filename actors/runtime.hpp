#pragma once
// How troupe configures CAF for every actor system it starts (the CLI, tests, benchmarks).

namespace caf {
class actor_system_config;
}

namespace troupe {

/// Registers every protocol type and sizes the scheduler: one work-stealing worker per core.
void configure_actor_system(caf::actor_system_config& cfg);

} // namespace troupe
