#pragma once
// `troupe demo`: an offline agent team on bundled scripts, in a fresh temporary directory.

#include <string>

namespace troupe {

/// Runs the demo, printing as `format` ("text" or "stream-json"); returns the exit code.
int run_demo(const std::string& format);

} // namespace troupe
