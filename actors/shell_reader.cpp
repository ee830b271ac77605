#include "actors/shell_reader.hpp"

#include <unistd.h>

#include <caf/actor_system.hpp>
#include <caf/blocking_actor.hpp>
#include <caf/send.hpp>

namespace troupe {

void spawn_shell_reader(caf::actor_system& sys, shell_process shell, int output_fd, int wake_fd,
                        size_t output_cap, uint64_t job, tool_executor_actor owner) {
  sys.spawn<caf::detached>([=](caf::blocking_actor*) {
    auto exit = wait_for_command(shell, output_fd, wake_fd, output_cap);
    ::close(output_fd);
    ::close(wake_fd);
    exit.job = job;
    caf::anon_send(owner, exited_atom::value, std::move(exit));
  });
}

} // namespace troupe
