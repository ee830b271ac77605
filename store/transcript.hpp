#pragma once
// A session's transcript: transcript.jsonl, one message per line, append-only; and the rules for
// a line a crash tore (transcript.jsonl.torn).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "protocol/expected.hpp"
#include "protocol/message.hpp"
#include "protocol/private_files.hpp"

namespace troupe {

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

/// True when `line` is a JSON object whose text ran out before it was complete: a line a crash
/// cut short (a whole line that is bad JSON is not).
bool json_line_cut_short(const std::string& line);

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

/// The first prompt a transcript holds (a user message from a prompt): its text cut to
/// `max_bytes` and when it was written. For a session written before session.json existed.
struct first_prompt {
  std::string text;
  int64_t timestamp_ms = 0;
};
std::optional<first_prompt> read_first_prompt(const std::filesystem::path& path,
                                             size_t max_bytes = 200);

} // namespace troupe
