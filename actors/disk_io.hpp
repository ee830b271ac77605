#pragma once
// The process's blocking file work on a thread of its own (see disk_io_actor).

#include "protocol/interfaces.hpp"

namespace caf {
class actor_system;
}

namespace troupe {

/// Spawns the disk actor: detached (its own thread), shared by every session of a process. It
/// ends once nobody holds it and its mailbox is empty.
disk_io_actor spawn_disk_io(caf::actor_system& sys);

} // namespace troupe
