#pragma once

namespace troupe {

/// troupe's version, as --version and a stream-json client's init line say it.
inline constexpr const char* troupe_version = "0.1.0";

/// Runs the troupe command line: parses argv, runs the subcommand, returns the exit code.
int run_cli(int argc, char** argv);

} // namespace troupe
