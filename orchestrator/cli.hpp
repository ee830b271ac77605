#pragma once

#include <string_view>

namespace troupe {

/// troupe's version, as --version and a stream-json client's init line say it.
inline constexpr const char* troupe_version = "0.1.0";

/// The commit the binary was built from (git's short hash, "-dirty" when the checkout had
/// changes; "unknown" outside a checkout): generated at build time.
std::string_view source_commit();

/// Runs the troupe command line: parses argv, runs the subcommand, returns the exit code.
int run_cli(int argc, char** argv);

} // namespace troupe
