#pragma once
// Glob patterns over relative paths, shared by the glob and grep tools, .gitignore handling
// and permission rules, so `src/**` means the same thing everywhere.

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace troupe {

/// Matches `path` (relative, '/'-separated) against a glob: `*` any run of characters but
/// '/', `?` one character but '/', `**` any run of whole path segments (zero included),
/// `[abc]`/`[!a-z]` a character class, `{a,b}` alternatives. The whole path must match.
bool glob_match(std::string_view pattern, std::string_view path);

/// The ignore rules of one .gitignore: patterns, `dir/` for directories only, a leading `/`
/// anchoring to its directory, `!` re-including. Enough for the usual files; the rarer forms
/// (escaped leading `#`, trailing spaces) are read literally.
class ignore_rules {
public:
  /// Reads `<root>/.gitignore` if there is one; `.git` itself is always ignored.
  static ignore_rules load(const std::filesystem::path& root);
  /// Whether a path relative to the root is ignored.
  bool ignored(std::string_view relative, bool is_directory) const;

private:
  struct rule {
    std::string pattern;
    bool anchored = false;
    bool directory_only = false;
    bool negated = false;
  };
  std::vector<rule> rules_;
};

/// Walks `root` in name order (a directory's files before its subdirectories), skipping what
/// `rules` ignore, and calls `visit`
/// with each regular file's path relative to root. Returns false to stop early.
void walk_files(const std::filesystem::path& root, const ignore_rules& rules,
                const std::function<bool(const std::filesystem::path& file,
                                         const std::string& relative)>& visit);

} // namespace troupe
