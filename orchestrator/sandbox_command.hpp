#pragma once
// `troupe sandbox --check`: what this machine offers for the tools' sandbox; and
// `troupe sandbox [--sandbox MODE] [--add-dir D] [--sandbox-network] -- COMMAND…`: runs one
// command inside the walls a session's shell would have, to try them.

#include <string>
#include <vector>

#include "orchestrator/run_flags.hpp"

namespace CLI {
class App;
}

namespace troupe {

struct sandbox_flags {
  run_flags walls;
  bool check = false;
  std::vector<std::string> command;
};

/// Adds `sandbox` to the command line; returns it.
CLI::App* add_sandbox_command(CLI::App& app, sandbox_flags& flags);

/// Returns the exit code: --check 0 when a sandbox can be built here, else 1; a command's own
/// exit code (128 + a signal), 2 for bad flags.
int run_sandbox(const sandbox_flags& flags);

} // namespace troupe
