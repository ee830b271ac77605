// The glob matcher every tool and permission rule shares (tools/path_match): the first line
// is the pattern, the rest the path.

#include <string_view>

#include "fuzz/targets.hpp"
#include "tools/path_match.hpp"

namespace troupe::fuzz {

int glob(const uint8_t* data, size_t size) {
  std::string_view text{reinterpret_cast<const char*>(data), size};
  auto cut = text.find('\n');
  auto pattern = text.substr(0, cut);
  auto path = cut == std::string_view::npos ? std::string_view{} : text.substr(cut + 1);
  bool matched = glob_match(pattern, path);
  // A pattern without special characters matches itself and only itself.
  if (pattern.find_first_of("*?[{\\") == std::string_view::npos)
    fuzz_check(matched == (pattern == path), "a literal pattern matches exactly itself");
  return 0;
}

} // namespace troupe::fuzz
