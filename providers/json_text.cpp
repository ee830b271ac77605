#include "providers/json_text.hpp"

#include <cstddef>

#include "providers/sse.hpp"

namespace troupe {

namespace {

const char* short_escape(unsigned char c) {
  switch (c) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      return nullptr;
  }
}

// Bytes copied as they are: printable ASCII but the quote and the backslash. A table, since the
// scan over these is most of what writing a body costs.
struct plain_bytes {
  bool table[256] = {};
  constexpr plain_bytes() {
    for (int c = 0x20; c < 0x80; ++c)
      table[c] = c != '"' && c != '\\';
  }
};
constexpr plain_bytes plain_table{};

bool plain(unsigned char c) { return plain_table.table[c]; }

} // namespace

void append_json_string(std::string& out, std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  static constexpr char replacement[] = "\xef\xbf\xbd";
  out.reserve(out.size() + text.size() + 2);
  out += '"';
  auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  size_t i = 0;
  while (i < text.size()) {
    size_t run = i;
    while (run < text.size() && plain(bytes[run]))
      ++run;
    out.append(text.data() + i, run - i);
    i = run;
    if (i == text.size())
      break;
    auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) { // a quote, a backslash or a control character
      if (const char* named = short_escape(c)) {
        out += named;
      } else {
        out += "\\u00";
        out += hex[c >> 4];
        out += hex[c & 0xf];
      }
      ++i;
      continue;
    }
    auto sequence = utf8_sequence_at(text, i);
    if (sequence.well_formed)
      out.append(text.data() + i, sequence.length);
    else // one U+FFFD for what came of it; the byte that broke it off starts what follows
      out.append(replacement, 3);
    i += sequence.length;
  }
  out += '"';
}

} // namespace troupe
