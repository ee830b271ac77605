#pragma once
// A detached actor that reads one command's output from the shell, off the scheduler threads.

#include <cstddef>
#include <cstdint>

#include "protocol/interfaces.hpp"
#include "tools/shell.hpp"

namespace caf {
class actor_system;
}

namespace troupe {

/// Spawns a reader on its own thread for the command just sent to `shell`; it sends
/// (exited_atom, process_exit) to `owner` when the command is done or the shell has ended.
/// The reader owns `output_fd` and `wake_fd` (copies made for it) and closes them.
void spawn_shell_reader(caf::actor_system& sys, shell_process shell, int output_fd, int wake_fd,
                        size_t output_cap, uint64_t job, tool_executor_actor owner);

} // namespace troupe
