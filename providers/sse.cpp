#include "providers/sse.hpp"

#include <algorithm>

namespace troupe {

namespace {

size_t line_end(std::string_view bytes, size_t from) {
  for (size_t i = from; i < bytes.size(); ++i)
    if (bytes[i] == '\n' || bytes[i] == '\r')
      return i;
  return std::string_view::npos;
}

} // namespace

std::vector<sse_event> sse_parser::feed(std::string_view bytes) {
  std::vector<sse_event> out;
  size_t i = 0;
  while (i < bytes.size() && !oversized_) {
    if (last_was_cr_ && bytes[i] == '\n') {
      last_was_cr_ = false; // the LF of a CRLF already ended the line
      ++i;
      continue;
    }
    last_was_cr_ = false;
    // Not find_first_of("\r\n"): it runs memchr over the two ends once per byte.
    auto end = line_end(bytes, i);
    auto piece = bytes.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i);
    // Counted before it is buffered: a line or an event past the cap never takes more memory
    // than the cap.
    if (line_.size() + piece.size() + data_.size() + event_.size() > max_event_bytes_) {
      line_.append(piece.substr(0, 200));
      overflow();
      break;
    }
    line_.append(piece);
    if (end == std::string_view::npos)
      break;
    last_was_cr_ = bytes[end] == '\r';
    take_line(out);
    i = end + 1;
  }
  return out;
}

void sse_parser::overflow() {
  oversized_ = true;
  std::string_view start = has_data_ ? std::string_view{data_} : std::string_view{line_};
  excerpt_ = std::string{has_data_ ? "data: " : ""} + std::string{start.substr(0, 200)};
  excerpt_.resize(std::min<size_t>(excerpt_.size(), 200));
  for (auto* buffer : {&line_, &event_, &data_}) {
    buffer->clear();
    buffer->shrink_to_fit();
  }
  has_data_ = false;
}

void sse_parser::take_line(std::vector<sse_event>& out) {
  if (line_.empty()) {
    if (has_data_) {
      out.push_back({std::move(event_), std::move(data_)});
      ++events_;
    }
    event_.clear();
    data_.clear();
    has_data_ = false;
    return;
  }
  if (line_[0] == ':') {
    line_.clear();
    return; // a comment (keep-alive)
  }
  auto colon = line_.find(':');
  std::string_view field{line_.data(), colon == std::string::npos ? line_.size() : colon};
  std::string_view value;
  if (colon != std::string::npos) {
    value = std::string_view{line_}.substr(colon + 1);
    if (!value.empty() && value[0] == ' ')
      value.remove_prefix(1);
  }
  if (field == "data") {
    if (has_data_)
      data_.push_back('\n');
    data_.append(value);
    has_data_ = true;
  } else if (field == "event") {
    event_ = std::string{value};
  }
  line_.clear();
}

namespace {

// How many continuation bytes follow `lead`, and the range the first of them must fall in;
// 0 continuation bytes for a byte that cannot start a sequence.
struct sequence_shape {
  size_t continuations;
  unsigned char low;
  unsigned char high;
};

sequence_shape shape_of(unsigned char lead) {
  if (lead >= 0xc2 && lead <= 0xdf)
    return {1, 0x80, 0xbf};
  if (lead == 0xe0)
    return {2, 0xa0, 0xbf};
  if (lead == 0xed)
    return {2, 0x80, 0x9f};
  if (lead >= 0xe1 && lead <= 0xef)
    return {2, 0x80, 0xbf};
  if (lead == 0xf0)
    return {3, 0x90, 0xbf};
  if (lead >= 0xf1 && lead <= 0xf3)
    return {3, 0x80, 0xbf};
  if (lead == 0xf4)
    return {3, 0x80, 0x8f};
  return {0, 0, 0};
}

} // namespace

utf8_sequence utf8_sequence_at(std::string_view text, size_t at) {
  auto lead = static_cast<unsigned char>(text[at]);
  if (lead < 0x80)
    return {1, true};
  auto shape = shape_of(lead);
  if (shape.continuations == 0) // a stray continuation byte, or one no sequence starts with
    return {1, false};
  size_t seen = 0; // continuation bytes that fit, after the lead
  while (seen < shape.continuations && at + 1 + seen < text.size()) {
    auto next = static_cast<unsigned char>(text[at + 1 + seen]);
    bool fits = seen == 0 ? next >= shape.low && next <= shape.high : (next & 0xc0) == 0x80;
    if (!fits)
      break;
    ++seen;
  }
  return {seen + 1, seen == shape.continuations};
}

std::string sanitize_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t run = 0; // where the well-formed bytes not yet copied start: copied a run at a time
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    auto sequence = utf8_sequence_at(s, i);
    if (sequence.well_formed) {
      i += sequence.length;
      continue;
    }
    out.append(s.substr(run, i - run));
    out.append("\xef\xbf\xbd");
    run = ++i; // each byte of an ill-formed sequence is replaced on its own
  }
  out.append(s.substr(run));
  return out;
}

} // namespace troupe
