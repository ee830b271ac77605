#pragma once
// What the kernel and bubblewrap offer a sandbox here: whether bwrap can build one (probed once
// per program), the facts `troupe sandbox --check` prints, and the seccomp program a sandbox's
// tools run under.

#include <string>
#include <vector>

#include "protocol/expected.hpp"

namespace troupe {

/// What this machine offers: bubblewrap, and whether it could build a sandbox here.
struct sandbox_support {
  /// The bwrap asked about. Empty: none found.
  std::string bwrap;
  /// A test sandbox (every namespace troupe uses) ran its command and said so.
  bool works = false;
  /// Why not, in words a user can act on; empty when it works.
  std::string problem;
};

/// Looks once per process and `bwrap` (the first call starts it once, ~15 ms); later calls
/// return the same answer.
sandbox_support probe_sandbox(const std::string& bwrap);

/// A line per fact for `troupe sandbox --check`: bubblewrap, user namespaces, Landlock.
std::vector<std::string> describe_sandbox_support(const std::string& bwrap);

/// The seccomp program for a sandbox's tools (see sandbox.hpp: sockets, io_uring, foreign
/// system-call ABIs), in a close-on-exec descriptor (never 0-3) at offset 0, for bwrap's
/// `--seccomp 3`; -1 on an architecture troupe has no program for.
expected<int> socket_filter_descriptor(bool network);

} // namespace troupe
