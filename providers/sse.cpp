#include "providers/sse.hpp"

namespace troupe {

std::vector<sse_event> sse_parser::feed(std::string_view bytes) {
  std::vector<sse_event> out;
  for (char c : bytes) {
    if (last_was_cr_ && c == '\n') {
      last_was_cr_ = false; // the LF of a CRLF already ended the line
      continue;
    }
    last_was_cr_ = c == '\r';
    if (c == '\n' || c == '\r')
      take_line(out);
    else
      line_.push_back(c);
  }
  return out;
}

void sse_parser::take_line(std::vector<sse_event>& out) {
  if (line_.empty()) {
    if (has_data_)
      out.push_back({std::move(event_), std::move(data_)});
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
