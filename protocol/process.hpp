#pragma once
// What a child process left behind, sent from its reader to the tool executor.

#include <cstdint>
#include <string>

#include <caf/meta/type_name.hpp>

namespace troupe {

/// The captured output and exit status of one finished child process.
struct process_exit {
  /// The executor's number for the job this process ran.
  uint64_t job = 0;
  /// stdout and stderr interleaved, cut to the output cap (head and tail kept).
  std::string output;
  /// Bytes the process wrote in all, including the ones cut.
  int64_t total_bytes = 0;
  /// Exit status, or 128 + signal number when a signal ended it.
  int32_t exit_code = 0;
  bool truncated = false;
  /// True when the process itself ended (for a persistent shell: it must be started again).
  bool shell_exited = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, process_exit& x) {
  return f(caf::meta::type_name("process_exit"), x.job, x.output, x.total_bytes, x.exit_code,
           x.truncated, x.shell_exited);
}

} // namespace troupe
