#include "protocol/bounded_json.hpp"

#include <string>
#include <utility>

namespace troupe {

size_t json_nesting_depth(std::string_view text, size_t limit) {
  size_t depth = 0;
  size_t deepest = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > deepest) {
          deepest = depth;
          if (deepest > limit)
            return deepest;
        }
        break;
      case ']':
      case '}':
        // Unbalanced closers make the text invalid; the parser says so, the count stays sane.
        if (depth > 0)
          --depth;
        break;
      default:
        break;
    }
  }
  return deepest;
}

expected<nlohmann::json> parse_json_bounded(std::string_view text, size_t max_depth) {
  if (json_nesting_depth(text, max_depth) > max_depth)
    return failure{"JSON nested deeper than " + std::to_string(max_depth) + " levels"};
  auto parsed = nlohmann::json::parse(text, nullptr, false);
  if (parsed.is_discarded())
    return failure{invalid_json_message};
  return expected<nlohmann::json>{std::move(parsed)};
}

} // namespace troupe
