#pragma once
// Server-sent events: splits a byte stream into events, whatever the chunk boundaries.

#include <string>
#include <string_view>
#include <vector>

namespace troupe {

/// One event: its name ("" when the stream gives none) and its data lines joined by '\n'.
struct sse_event {
  std::string event;
  std::string data;

  friend bool operator==(const sse_event& a, const sse_event& b) {
    return a.event == b.event && a.data == b.data;
  }
};

/// Incremental SSE parser (LF, CRLF or CR line ends; comments and unknown fields skipped).
class sse_parser {
public:
  /// Feeds bytes; returns the events they completed.
  std::vector<sse_event> feed(std::string_view bytes);

  /// Returns true when bytes of an unfinished event are buffered.
  bool has_partial() const { return !line_.empty() || has_data_ || !event_.empty(); }

private:
  void take_line(std::vector<sse_event>& out);

  std::string line_;
  std::string event_;
  std::string data_;
  bool has_data_ = false;
  bool last_was_cr_ = false;
};

/// Replaces invalid UTF-8 sequences with U+FFFD so JSON parsing never fails on them.
std::string sanitize_utf8(std::string_view bytes);

} // namespace troupe
