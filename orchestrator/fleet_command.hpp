#pragma once
// `troupe fleet TASKS`: many agents in one process, one per task, resumable; and
// `troupe fleet status ID`.

#include <cstdint>
#include <string>

#include "orchestrator/run_flags.hpp"

namespace CLI {
class App;
}

namespace troupe {

/// The flags of `troupe fleet`, as typed.
struct fleet_flags {
  /// The flags every agent of the fleet shares (model, caps, permissions, settings, …).
  run_flags agent;
  /// The tasks file ("-": stdin); may be left out when --fleet-id names a fleet that has run.
  std::string tasks;
  std::string out;
  std::string fleet_id;
  std::string concurrency;
  std::string budget_tokens;
  std::string budget_usd;
  std::string shell_idle_stop;
  /// `troupe fleet status ID`.
  std::string status_id;
  bool status_json = false;
};

/// Adds `fleet` (and `fleet status`) to the command line; returns the two subcommands.
struct fleet_commands {
  CLI::App* fleet = nullptr;
  CLI::App* status = nullptr;
};
fleet_commands add_fleet_command(CLI::App& app, fleet_flags& flags);

/// Runs the fleet; returns the exit code (0: every task completed; 1: some did not; 2: bad
/// input; 130: stopped by Ctrl+C).
int run_fleet(const fleet_flags& flags);

/// Prints how far a fleet is; returns the exit code.
int run_fleet_status(const fleet_flags& flags);

} // namespace troupe
