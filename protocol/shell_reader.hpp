#pragma once
// The tool executor's reader of its shell's output: a thread of its own, started with the shell's
// first command and kept for the next ones (a thread started per command cost more than a
// trivial command, and its start-up landed on the step's critical path).

#include <cstdint>
#include <string>

#include <caf/typed_actor.hpp>

#include "protocol/atoms.hpp"

namespace troupe {

/// (job, the shell's pid, the reader's own copy of the shell's output pipe, the read end of the
/// job's child_control, the shell's nonce, the command's timeout in ms): reads one command's
/// output up to its end marker, killing the shell's group at the timeout, and sends its
/// process_exit to the executor. It owns and closes both descriptors.
using shell_reader_actor = caf::typed_actor<
  caf::reacts_to<execute_atom, uint64_t, int32_t, int32_t, int32_t, std::string, int64_t>>;

} // namespace troupe
