#pragma once
// The session's files: transcript.jsonl (append-only) and state.json (the loop state).

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/expected.hpp"
#include "protocol/loop_state.hpp"
#include "protocol/message.hpp"

namespace troupe {

/// Owns a file descriptor and closes it once.
class file_handle {
public:
  file_handle() = default;
  explicit file_handle(int fd) : fd_(fd) {}
  file_handle(const file_handle&) = delete;
  file_handle& operator=(const file_handle&) = delete;
  file_handle(file_handle&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  file_handle& operator=(file_handle&& other) noexcept;
  ~file_handle();

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }

private:
  int fd_ = -1;
};

/// Appends messages to a transcript, one JSON object per line, each line one write(2).
class transcript_writer {
public:
  /// Opens (creating if needed) the transcript at path for appending.
  static expected<transcript_writer> open(const std::filesystem::path& path);

  /// Appends one message as one line. The line reaches the kernel before this returns.
  expected<bool> append(const message& msg);

  /// Forces everything written so far to disk.
  void sync();

  /// Returns a duplicate of the descriptor (the caller closes it), -1 when not open: for an
  /// fsync on another thread.
  int duplicate_descriptor() const;

private:
  file_handle fd_;
  std::filesystem::path path_;
  /// The file ends in a torn line left in place: the next append ends it first.
  bool end_torn_line_ = false;
};

/// What load_transcript found.
struct loaded_transcript {
  std::vector<message> messages;
  /// Set when a torn last line was met: moved to transcript.jsonl.torn, or left in place when
  /// it could not be saved there (and torn lines kept in place that were skipped).
  std::string repair_note;
};

/// How a transcript is read: by the process about to run its session (which may repair it), or
/// by anyone else (which must never write to it: another process may be appending).
enum class transcript_access { owner, reader };

/// Loads a transcript. A torn last line (no newline: a crash mid-write, or a line being
/// written) is skipped; its owner also moves it aside and cuts the file back to its last whole
/// line, but only once its bytes are safely in transcript.jsonl.torn (else it stays, and the
/// next append ends it). A whole line that is a JSON object cut short (such a torn line) is
/// skipped with a note; any other bad line, the last complete one included, is an error naming
/// its number.
expected<loaded_transcript> load_transcript(const std::filesystem::path& path,
                                            transcript_access access = transcript_access::owner);

/// Keeps a small JSON file up to date (state.json after every step, session.json after every
/// turn): rewritten in place, one pwrite(2) per update, no rename: a rename over an existing
/// file costs ~0.4 ms on ext4 (it forces the old data out), more than the rest of a step
/// together. A crashing process cannot tear a single write; a reader racing a write may have
/// to read again.
class json_file {
public:
  /// Opens (creating if needed) the file at path.
  static expected<json_file> open(const std::filesystem::path& path);

  /// Replaces the file's content with the given value.
  expected<bool> write(const nlohmann::json& value);

private:
  file_handle fd_;
  size_t size_ = 0;
  std::filesystem::path path_;
};

/// Reads a state file (state.json).
expected<loop_state> read_loop_state(const std::filesystem::path& path);

} // namespace troupe
