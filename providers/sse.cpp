#include "providers/sse.hpp"

#include <algorithm>

namespace troupe {

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
    auto end = bytes.find_first_of("\r\n", i);
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

std::string sanitize_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool valid = len > 0 && i + len <= s.size();
    for (size_t k = 1; valid && k < len; ++k)
      valid = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (valid && len == 2)
      valid = c >= 0xc2; // no overlong forms
    if (valid && len == 3) {
      auto c1 = static_cast<unsigned char>(s[i + 1]);
      valid = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0); // overlong, surrogates
    }
    if (valid && len == 4) {
      auto c1 = static_cast<unsigned char>(s[i + 1]);
      valid = c <= 0xf4 && !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);
    }
    if (valid) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out.append("\xef\xbf\xbd");
      ++i;
    }
  }
  return out;
}

} // namespace troupe
