#pragma once
// Runs a child process to its end off the scheduler threads: supervise_child (tools/
// child_process) on a detached actor's thread of its own, one per child. The shell's commands,
// background tasks and hook commands all run this way.

#include <functional>

#include "tools/child_process.hpp"

namespace caf {
class actor_system;
}

namespace troupe {

/// Supervises `child` as `how` says on a thread of its own and calls `done` there with its end
/// (`done` typically sends it to an actor). Owns the child's pipes and `control` (the read end
/// from child_control::make).
void run_child_detached(caf::actor_system& sys, started_child child, supervision how,
                        int control, std::function<void(child_end)> done);

} // namespace troupe
