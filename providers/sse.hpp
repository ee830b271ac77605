#pragma once
// Server-sent events: splits a byte stream into events, whatever the chunk boundaries.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace troupe {

/// The default cap on one event: far above any real event (a whole tool call's arguments in
/// one delta is a few hundred KiB), far below what would strain memory.
constexpr size_t default_max_event_bytes = size_t{8} << 20;

/// One event: its name ("" when the stream gives none) and its data lines joined by '\n'.
struct sse_event {
  std::string event;
  std::string data;

  friend bool operator==(const sse_event& a, const sse_event& b) {
    return a.event == b.event && a.data == b.data;
  }
};

/// Incremental SSE parser (LF, CRLF or CR line ends; comments and unknown fields skipped).
/// Never buffers more than its cap: an event (its name, data and the line being read) that
/// grows past it stops the parser, which then ignores all further input.
class sse_parser {
public:
  explicit sse_parser(size_t max_event_bytes = default_max_event_bytes)
    : max_event_bytes_(max_event_bytes) {}

  /// Feeds bytes; returns the events they completed.
  std::vector<sse_event> feed(std::string_view bytes);

  /// Returns true when bytes of an unfinished event are buffered.
  bool has_partial() const { return !line_.empty() || has_data_ || !event_.empty(); }

  /// Returns true once an event grew past the cap.
  bool oversized() const { return oversized_; }

  /// Returns the first bytes (at most 200) of the event that grew past the cap.
  const std::string& oversized_excerpt() const { return excerpt_; }

  /// Returns the cap on one event, in bytes.
  size_t max_event_bytes() const { return max_event_bytes_; }

  /// Returns how many events were completed so far.
  size_t events() const { return events_; }

private:
  void take_line(std::vector<sse_event>& out);
  void overflow();

  size_t max_event_bytes_;
  std::string line_;
  std::string event_;
  std::string data_;
  std::string excerpt_;
  size_t events_ = 0;
  bool has_data_ = false;
  bool last_was_cr_ = false;
  bool oversized_ = false;
};

/// The UTF-8 sequence that starts at `text[at]` (`at` < size): well formed, with its length (1
/// for ASCII), by Unicode's table (no overlong forms, no surrogates, nothing past U+10FFFF); or
/// ill formed, with the length of its maximal subpart (at least 1: the lead and the
/// continuation bytes that fit before it broke off).
struct utf8_sequence {
  size_t length;
  bool well_formed;
};
utf8_sequence utf8_sequence_at(std::string_view text, size_t at);

/// Replaces invalid UTF-8 sequences with U+FFFD so JSON parsing never fails on them.
std::string sanitize_utf8(std::string_view bytes);

} // namespace troupe
