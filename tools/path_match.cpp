#include "tools/path_match.hpp"

#include <algorithm>
#include <fstream>

namespace troupe {

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
                const std::function<bool(const std::filesystem::path&, const std::string&)>& visit,
                const std::function<bool(const std::filesystem::path&)>& skip_directory) {
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
      if (directory && skip_directory && skip_directory(entry.path()))
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
