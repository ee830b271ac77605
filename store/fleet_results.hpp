#pragma once
// A fleet's results file: one JSON object per finished task, appended whole as the task ends.
// A line a crash cut short does not count (its task runs again); what a rerun skips and
// `troupe fleet status` counts are read from here.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "protocol/expected.hpp"
#include "protocol/private_files.hpp"

namespace troupe {

/// Appends result lines, each one write(2) (taken back when it fails part-way).
class fleet_results_writer {
public:
  /// Opens (creating 0600 if needed) the results file for appending. A last line without its
  /// newline (a kill mid-write) is cut off: it never counted (read_fleet_results skips it), its
  /// task runs again and writes its whole line, and the file never holds two for one id.
  /// `cut` is set to what was cut off. Fails while another writer (another fleet, in any
  /// process) holds the file.
  static expected<fleet_results_writer> open(const std::filesystem::path& path,
                                             std::string* cut = nullptr);

  /// Appends one line (a JSON object, no newline).
  expected<bool> append(const std::string& line);

  const std::filesystem::path& path() const { return path_; }

private:
  file_handle fd_;
  std::filesystem::path path_;
};

/// One task's result as a rerun and `fleet status` need it.
struct fleet_result {
  std::string id;
  std::string terminal_reason;
  /// "" for a task that ran to an end; "budget", "invalid task", … otherwise.
  std::string error;
};

/// What a results file holds: each id's result (the last line for an id wins: a task refused
/// for the budget runs again on a rerun, and its new line follows), and the lines
/// that are no result (cut short, not JSON, no id), by number.
struct fleet_results {
  std::map<std::string, fleet_result> by_id;
  std::vector<std::string> skipped;
};

/// Reads a results file; a missing one holds no result. Fails only when it cannot be read.
expected<fleet_results> read_fleet_results(const std::filesystem::path& path);

/// How the results of a fleet add up.
struct fleet_counts {
  int64_t completed = 0;
  /// Ended in another terminal state, or with an error.
  int64_t failed = 0;
  /// Not started: the budget ran out first.
  int64_t budget = 0;
  /// Results by terminal reason; those without one: "budget", "invalid task", "not started".
  std::map<std::string, int64_t> by_reason;
};

fleet_counts count_fleet_results(const fleet_results& results);

} // namespace troupe
