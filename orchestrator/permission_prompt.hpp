#pragma once
// Asks the person at the terminal whether a tool call may run: y / n / always.

#include <optional>

#include "protocol/interfaces.hpp"

namespace caf {
class actor_system;
}

namespace troupe {

/// Spawns the asker on a thread of its own (it blocks on the terminal). It reads and writes
/// /dev/tty, so stdout stays the run's output.
permission_asker_actor spawn_terminal_asker(caf::actor_system& sys);

/// A call as the question shows it: "shell: ls -la", "write src/a.cpp", …
std::string describe_call(const tool_call& call);

/// The question put to the user: why the call needs approval, then the call, both printable.
std::string permission_question(const tool_call& call, const std::string& reason);

/// Reads a typed answer to the question (y, yes, n, no, a, always; any case, spaces ignored),
/// or nothing when it is none of them.
std::optional<permission_answer> parse_permission_answer(const std::string& line);

/// Asks one question and reads its answer over the given descriptors. End of input or an
/// unreadable answer is no.
permission_answer ask_permission(int in_fd, int out_fd, const tool_call& call,
                                 const std::string& reason);

} // namespace troupe
