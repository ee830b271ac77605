#include "tools/path_match.hpp"

#include <algorithm>
#include <fstream>

namespace troupe {

namespace {

// Matches one character class at pattern[p] == '['; returns the position after it, or npos
// when the class is unterminated (then '[' is a literal).
size_t match_class(std::string_view pattern, size_t p, char c, bool& matched) {
  size_t i = p + 1;
  bool negate = i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^');
  if (negate)
    ++i;
  bool any = false;
  bool first = true;
  for (; i < pattern.size() && (pattern[i] != ']' || first); ++i, first = false) {
    char low = pattern[i];
    char high = low;
    if (i + 2 < pattern.size() && pattern[i + 1] == '-' && pattern[i + 2] != ']') {
      high = pattern[i + 2];
      i += 2;
    }
    if (c >= low && c <= high)
      any = true;
  }
  if (i >= pattern.size())
    return std::string_view::npos;
  matched = any != negate;
  return i + 1;
}

bool match_from(std::string_view pattern, size_t p, std::string_view path, size_t s) {
  while (p < pattern.size()) {
    char pc = pattern[p];
    if (pc == '{') {
      auto close = pattern.find('}', p);
      if (close != std::string_view::npos) {
        auto rest = pattern.substr(close + 1);
        auto body = pattern.substr(p + 1, close - p - 1);
        for (size_t start = 0;;) {
          auto comma = body.find(',', start);
          auto choice = body.substr(start, comma == std::string_view::npos ? comma : comma - start);
          std::string candidate{pattern.substr(0, p)};
          candidate += choice;
          candidate += rest;
          if (match_from(candidate, p, path, s))
            return true;
          if (comma == std::string_view::npos)
            return false;
          start = comma + 1;
        }
      }
    }
    if (pc == '*' && p + 1 < pattern.size() && pattern[p + 1] == '*') {
      // `**/` matches zero or more whole segments; a trailing `**` matches everything left.
      size_t next = p + 2;
      bool segment = next < pattern.size() && pattern[next] == '/';
      if (segment)
        ++next;
      if (next >= pattern.size())
        return true;
      for (size_t i = s; i <= path.size(); ++i)
        if ((i == s || path[i - 1] == '/' || !segment) && match_from(pattern, next, path, i))
          return true;
      return false;
    }
    if (pc == '*') {
      for (size_t i = s; i <= path.size(); ++i) {
        if (match_from(pattern, p + 1, path, i))
          return true;
        if (i < path.size() && path[i] == '/')
          break;
      }
      return false;
    }
    if (s >= path.size())
      return false;
    if (pc == '?') {
      if (path[s] == '/')
        return false;
    } else if (pc == '[') {
      bool matched = false;
      auto after = match_class(pattern, p, path[s], matched);
      if (after != std::string_view::npos) {
        if (!matched || path[s] == '/')
          return false;
        p = after;
        ++s;
        continue;
      }
      if (path[s] != '[')
        return false;
    } else if (pc != path[s]) {
      return false;
    }
    ++p;
    ++s;
  }
  return s == path.size();
}

} // namespace

bool glob_match(std::string_view pattern, std::string_view path) {
  return match_from(pattern, 0, path, 0);
}

ignore_rules ignore_rules::load(const std::filesystem::path& root) {
  ignore_rules result;
  result.rules_.push_back({".git", false, true, false});
  std::ifstream in{root / ".gitignore"};
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
      line.pop_back();
    if (line.empty() || line[0] == '#')
      continue;
    rule r;
    if (line[0] == '!') {
      r.negated = true;
      line.erase(0, 1);
    }
    if (!line.empty() && line.back() == '/') {
      r.directory_only = true;
      line.pop_back();
    }
    if (!line.empty() && line[0] == '/') {
      r.anchored = true;
      line.erase(0, 1);
    } else if (line.find('/') != std::string::npos) {
      r.anchored = true; // a slash inside the pattern anchors it too, as git does
    }
    if (line.empty())
      continue;
    r.pattern = line;
    result.rules_.push_back(std::move(r));
  }
  return result;
}

bool ignore_rules::ignored(std::string_view relative, bool is_directory) const {
  auto slash = relative.rfind('/');
  auto name = slash == std::string_view::npos ? relative : relative.substr(slash + 1);
  bool result = false;
  for (auto& r : rules_) {
    if (r.directory_only && !is_directory)
      continue;
    bool hit = r.anchored ? glob_match(r.pattern, relative) : glob_match(r.pattern, name);
    if (hit)
      result = !r.negated;
  }
  return result;
}

void walk_files(const std::filesystem::path& root, const ignore_rules& rules,
                const std::function<bool(const std::filesystem::path&, const std::string&)>& visit) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::pair<fs::path, std::string>> stack{{root, ""}};
  while (!stack.empty()) {
    auto [dir, prefix] = std::move(stack.back());
    stack.pop_back();
    std::vector<fs::directory_entry> entries;
    for (fs::directory_iterator it{dir, fs::directory_options::skip_permission_denied, ec}, end;
         !ec && it != end; it.increment(ec))
      entries.push_back(*it);
    std::sort(entries.begin(), entries.end(),
              [](auto& a, auto& b) { return a.path().filename() < b.path().filename(); });
    std::vector<std::pair<fs::path, std::string>> subdirs;
    for (auto& entry : entries) {
      auto relative = prefix + entry.path().filename().string();
      // Symbolic links are not followed into directories: a loop must not hang a search.
      bool directory = entry.is_directory(ec) && !entry.is_symlink(ec);
      if (rules.ignored(relative, directory))
        continue;
      if (directory)
        subdirs.emplace_back(entry.path(), relative + "/");
      else if (entry.is_regular_file(ec) && !visit(entry.path(), relative))
        return;
    }
    // Pushed in reverse so the first subdirectory is walked first.
    for (auto i = subdirs.rbegin(); i != subdirs.rend(); ++i)
      stack.push_back(std::move(*i));
  }
}

} // namespace troupe
