#pragma once
// A detached actor that reads one child process to its end, off the scheduler threads.

#include <cstddef>
#include <cstdint>

#include "protocol/interfaces.hpp"
#include "tools/shell.hpp"

namespace caf {
class actor_system;
}

namespace troupe {

/// Spawns a reader on its own thread; it sends (exited_atom, process_exit) to `owner`.
void spawn_shell_reader(caf::actor_system& sys, shell_child child, size_t output_cap,
                        uint64_t job, tool_executor_actor owner);

} // namespace troupe
