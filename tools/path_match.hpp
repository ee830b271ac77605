#pragma once
// Glob patterns over relative paths, shared by the glob and grep tools, .gitignore handling
// and permission rules, so `src/**` means the same thing everywhere.

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace troupe {

/// Matches `path` (relative, '/'-separated) against a glob: `*` any run of characters but
/// '/', `?` one character but '/', `**` any run of whole path segments (zero included),
/// `[abc]`/`[!a-z]` a character class, `{a,b}` alternatives (nested too). The whole path must
/// match. Takes O(path × pattern) time whatever the pattern; a pattern glob_pattern_error
/// refuses matches nothing.
bool glob_match(std::string_view pattern, std::string_view path);

/// Longest pattern glob_match accepts.
constexpr size_t max_glob_pattern_length = 4096;
/// Most `{…,…}` alternatives in one pattern, all groups counted.
constexpr size_t max_glob_alternatives = 1000;
/// Deepest nesting of braces.
constexpr int max_glob_brace_depth = 10;

/// Says what is wrong with a pattern past the limits above, for the model; nullopt when fine.
std::optional<std::string> glob_pattern_error(std::string_view pattern);

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
/// `rules` ignore and the directories `skip_directory` (when given) returns true for, and calls
/// `visit` with each regular file's path relative to root; `visit` returns false to stop early.
void walk_files(const std::filesystem::path& root, const ignore_rules& rules,
                const std::function<bool(const std::filesystem::path& file,
                                         const std::string& relative)>& visit,
                const std::function<bool(const std::filesystem::path& directory)>&
                  skip_directory = nullptr);

} // namespace troupe
