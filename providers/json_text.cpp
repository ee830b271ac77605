#include "providers/json_text.hpp"

#include <cstddef>

namespace troupe {

namespace {

// How many continuation bytes follow `lead`, and the range the first of them must fall in
// (Unicode's table of well-formed UTF-8: no overlong forms, no surrogates, nothing past
// U+10FFFF); 0 continuation bytes for a byte that cannot start a sequence.
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
  size_t i = 0;
  while (i < text.size()) {
    size_t run = i;
    auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
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
    auto shape = shape_of(c);
    if (shape.continuations == 0) { // a stray continuation byte, or one no sequence starts with
      out.append(replacement, 3);
      ++i;
      continue;
    }
    size_t seen = 0; // continuation bytes that fit, after the lead
    while (seen < shape.continuations && i + 1 + seen < text.size()) {
      auto next = static_cast<unsigned char>(text[i + 1 + seen]);
      bool fits = seen == 0 ? next >= shape.low && next <= shape.high : (next & 0xc0) == 0x80;
      if (!fits)
        break;
      ++seen;
    }
    if (seen == shape.continuations) {
      out.append(text.data() + i, seen + 1);
    } else {
      // The sequence broke off: one U+FFFD for what came of it; the byte that broke it is
      // read again as the start of what follows.
      out.append(replacement, 3);
    }
    i += seen + 1;
  }
  out += '"';
}

} // namespace troupe
