#pragma once
// `troupe demo`: an offline agent team on bundled scripts, in a fresh temporary directory.

#include <string>

namespace troupe {

/// Runs the demo, printing as `format` ("text" or "stream-json"); returns the exit code. Its
/// temporary directory is removed at the end (an interrupted demo's too) unless `keep`: then
/// where it is is printed.
int run_demo(const std::string& format, bool keep = false);

} // namespace troupe
