#pragma once
// Where a path really leads, and files opened there without a second lookup: what the
// permission check decides about is the real location (symbolic links followed), and the file
// tools write exactly there, from directory descriptors, so a link swapped in between cannot
// send a write somewhere else.

#include <filesystem>
#include <string>

#include "protocol/expected.hpp"

namespace troupe {

/// Most symbolic links followed while resolving one path (Linux's own limit).
constexpr int max_symlink_hops = 40;

/// Returns the real location of an absolute `path`: every symbolic link on the way, the last
/// component's included (a dangling link leads to where it points), followed; the part that
/// does not exist is kept as written. Fails on a link loop or a component it cannot inspect.
expected<std::filesystem::path> real_location(const std::filesystem::path& path);

/// True when `path` is `root` or under it, compared as written (no link followed).
bool lies_within(const std::filesystem::path& path, const std::filesystem::path& root);

/// True when `real` (a real location) is `root` or under it; `root` is resolved first.
bool is_within(const std::filesystem::path& real, const std::filesystem::path& root);

/// A file named by the directory that holds it, opened component by component from `/` with
/// O_NOFOLLOW (links are read and followed by hand), and its name there. Nothing is looked up
/// by path again after resolving: reads and writes go through the directory's descriptor.
class resolved_file {
public:
  /// Resolves `path` (absolute). With `create_directories`, missing directories are made.
  static expected<resolved_file> resolve(const std::filesystem::path& path,
                                         bool create_directories);

  resolved_file(resolved_file&& other) noexcept;
  resolved_file& operator=(resolved_file&& other) noexcept;
  resolved_file(const resolved_file&) = delete;
  resolved_file& operator=(const resolved_file&) = delete;
  ~resolved_file();

  /// The real path of the file.
  std::filesystem::path real_path() const { return real_dir_ / name_; }
  /// True when something (a file, a directory…) has the name in the directory.
  bool exists() const;
  /// Reads the whole regular file. Returns an error message, or empty on success.
  std::string read(std::string& content) const;
  /// Replaces the file whole (keeping its mode) by a new one written beside it and renamed
  /// over it: the old content stays until the new one is complete. Returns an error message,
  /// or empty on success.
  std::string write(const std::string& content) const;

private:
  resolved_file() = default;
  int dir_ = -1;
  std::filesystem::path real_dir_;
  std::string name_;
};

/// `path` as the model gave it, and where it really leads when a link made that elsewhere.
std::string shown_path(const std::filesystem::path& path, const resolved_file& file);

/// An error result's text when `real` (where `path` leads now) is not where the permission
/// check found it to lead (`approved`, empty: nothing to hold it to): a link was swapped in
/// between the decision and the call. Empty when they agree.
std::string moved_since_approval(const std::filesystem::path& path,
                                 const std::filesystem::path& real, const std::string& approved);

} // namespace troupe
