#pragma once
// A session's small JSON files: state.json (the loop state, after every step) and session.json
// (what `troupe ls` shows, after every turn). The session rewrites them in place; readers in
// other processes may race a write and read again.

#include <cstddef>
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "protocol/expected.hpp"
#include "protocol/loop_state.hpp"
#include "protocol/private_files.hpp"
#include "protocol/session_info.hpp"

namespace troupe {

/// Keeps a small JSON file up to date (state.json after every step, session.json after every
/// turn): rewritten in place, one pwrite(2) per update, no rename: a rename over an existing
/// file costs ~0.4 ms on ext4 (it forces the old data out), more than the rest of a step
/// together. A crashing process cannot tear a single write; a reader racing a write may have
/// to read again.
class json_file {
public:
  /// Opens (creating if needed) the file at path. Not `keep_open`: the descriptor is closed
  /// again and each write opens it for itself (a fleet's ten thousand agents hold no two
  /// descriptors each between steps).
  static expected<json_file> open(const std::filesystem::path& path, bool keep_open = true);

  /// Replaces the file's content with the given value.
  expected<bool> write(const nlohmann::json& value);

private:
  file_handle fd_;
  size_t size_ = 0;
  std::filesystem::path path_;
  bool keep_open_ = true;
};

/// How often a file read torn is read, 1 ms apart: a writer's pwrite takes microseconds.
inline constexpr int torn_read_tries = 5;

/// Reads a JSON object written by a json_file. A read that races the writer and comes back torn
/// is read again (`tries` reads in all, 1 ms apart); the error says why it is not an object
/// (missing, unreadable, not JSON, not an object) after the last.
expected<nlohmann::json> read_json_object(const std::filesystem::path& path,
                                          int tries = torn_read_tries);

/// Reads a state file (state.json), `tries` times while it reads torn (1: its owner reads it,
/// and nobody writes it meanwhile).
expected<loop_state> read_loop_state(const std::filesystem::path& path,
                                     int tries = torn_read_tries);

/// Reads session.json, `tries` times while it reads torn; an error when it is missing or not a
/// session's.
expected<session_info> read_session_info(const std::filesystem::path& path,
                                         int tries = torn_read_tries);

} // namespace troupe
