#pragma once
// The process's blocking file work on a thread of its own (see disk_io_actor).

#include <cstddef>

#include "store/notification_queue.hpp"
#include "protocol/interfaces.hpp"

namespace caf {
class actor_system;
}

namespace troupe {

/// Spawns the disk actor: detached (its own thread), shared by every session of a process. It
/// ends once nobody holds it and its mailbox is empty. Its queue readers take notifications of
/// up to `notification_cap` bytes of text (longer lines are set aside); what it appends for a
/// subagent is cut to that size.
disk_io_actor spawn_disk_io(caf::actor_system& sys,
                            size_t notification_cap = notification_size_cap);

} // namespace troupe
