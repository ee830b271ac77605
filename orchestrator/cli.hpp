#pragma once

namespace troupe {

/// Runs the troupe command line: parses argv, runs the subcommand, returns the exit code.
int run_cli(int argc, char** argv);

} // namespace troupe
