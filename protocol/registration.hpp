#pragma once

namespace caf {
class actor_system_config;
}

namespace troupe {

/// Registers every protocol type with CAF (needed on both ends of a remote connection).
void register_protocol_types(caf::actor_system_config& cfg);

} // namespace troupe
