#pragma once
// The session's files: transcript.jsonl (append-only) and state.json (the loop state).

#include <filesystem>
#include <string>
#include <vector>

#include "protocol/expected.hpp"
#include "protocol/loop_state.hpp"
#include "protocol/message.hpp"

namespace troupe {

/// Appends messages to a transcript, one JSON object per line, each line one write(2).
class transcript_writer {
public:
  transcript_writer() = default;
  transcript_writer(const transcript_writer&) = delete;
  transcript_writer& operator=(const transcript_writer&) = delete;
  transcript_writer(transcript_writer&& other) noexcept;
  transcript_writer& operator=(transcript_writer&& other) noexcept;
  ~transcript_writer();

  /// Opens (creating if needed) the transcript at path for appending.
  static expected<transcript_writer> open(const std::filesystem::path& path);

  /// Appends one message as one line. The line reaches the kernel before this returns.
  expected<bool> append(const message& msg);

  /// Forces everything written so far to disk.
  void sync();

private:
  int fd_ = -1;
  std::filesystem::path path_;
};

/// What load_transcript found.
struct loaded_transcript {
  std::vector<message> messages;
  /// Set when a torn last line was cut off (its bytes are kept in transcript.jsonl.torn).
  std::string repair_note;
};

/// Loads a transcript. A torn last line (a crash mid-write) is moved aside and the file
/// truncated to its last whole line; a bad line elsewhere is an error naming its number.
expected<loaded_transcript> load_transcript(const std::filesystem::path& path);

/// Keeps state.json up to date: the loop state is rewritten in place after every step.
/// One pwrite(2) per update, no rename: a rename over an existing file costs ~0.4 ms on ext4
/// (it forces the old data out), more than the rest of a step together. A crashing process
/// cannot tear a single write; a reader racing a write may have to read again.
class loop_state_file {
public:
  loop_state_file() = default;
  loop_state_file(const loop_state_file&) = delete;
  loop_state_file& operator=(const loop_state_file&) = delete;
  loop_state_file(loop_state_file&& other) noexcept;
  loop_state_file& operator=(loop_state_file&& other) noexcept;
  ~loop_state_file();

  /// Opens (creating if needed) the state file at path.
  static expected<loop_state_file> open(const std::filesystem::path& path);

  /// Replaces the file's content with the given state.
  expected<bool> write(const loop_state& state);

private:
  int fd_ = -1;
  size_t size_ = 0;
  std::filesystem::path path_;
};

/// Reads a state file written by loop_state_file.
expected<loop_state> read_loop_state(const std::filesystem::path& path);

} // namespace troupe
