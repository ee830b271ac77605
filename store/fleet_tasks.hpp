#pragma once
// A fleet's tasks file: one JSON object per line (JSONL), or CSV with a header row, as Codex's
// agent jobs take. A bad line is named by its number and the rest stay usable; duplicate ids
// make the whole file unusable (which result would be whose?).

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/expected.hpp"

namespace troupe {

/// One task: a full agent run.
struct fleet_task {
  std::string id;
  std::string prompt;
  /// Empty: the fleet's --model.
  std::string model;
  /// Empty: the fleet's workspace; relative: below it.
  std::string cwd;
  /// 0: the fleet's --max-steps.
  int32_t max_steps = 0;
  /// More system instructions for this task, after troupe's own.
  std::string system;
  /// Allow rules for this task on top of the fleet's (`shell(git *)`, `write`).
  std::vector<std::string> allow;
  /// The task's metadata object as JSON text, copied to its result line; empty: none.
  std::string metadata;
  /// Its line in the file (1-based; a CSV row's first line).
  int64_t line = 0;
};

/// A line that is no usable task: its number, why, and its id when one could be read, else
/// "line-N".
struct fleet_task_error {
  int64_t line = 0;
  std::string id;
  std::string message;
};

struct fleet_tasks {
  std::vector<fleet_task> tasks;
  std::vector<fleet_task_error> errors;
};

enum class fleet_tasks_format { jsonl, csv };

/// The format of a tasks file: by its name (.csv, .jsonl/.json), else by its first character
/// that is not white space ('{' is JSONL).
fleet_tasks_format guess_fleet_tasks_format(const std::string& file_name, const std::string& text);

/// Parses a tasks file. JSONL fields: id (string or integer), prompt, model, cwd, max_steps,
/// system, allow (strings), metadata (an object); any other field makes the line an error (a
/// typo must not run a task without what it meant). CSV: a header with at least id and prompt;
/// allow is split at ';', columns troupe does not know become metadata. An empty line is
/// skipped, and a leading byte-order mark. Fails as a whole (an error for the user, nothing
/// run) on duplicate ids (a bad line's "line-N" included), a CSV
/// header without id or prompt, or a file with no task at all.
expected<fleet_tasks> parse_fleet_tasks(const std::string& text, fleet_tasks_format format);

/// The task as one JSONL line (no newline), as the fleet's own copy of its tasks keeps it.
std::string fleet_task_line(const fleet_task& task);

} // namespace troupe
