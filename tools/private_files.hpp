#pragma once
// Files only their owner may read: everything troupe keeps under a session's directory (whole
// tool outputs, transcripts, task logs hold secrets). Directories are 0700 and files 0600
// whatever the process's umask: modes are given at creation and set again with (f)chmod.

#include <cstddef>
#include <filesystem>
#include <string>

namespace troupe {

/// Mode of every directory troupe makes for a session.
inline constexpr unsigned private_dir_mode = 0700;
/// Mode of every file troupe writes under a session's directory.
inline constexpr unsigned private_file_mode = 0600;

/// Creates `dir` and its missing parents, each new one 0700, and sets `dir` itself to 0700.
/// Returns an error message, empty on success.
std::string make_private_dirs(const std::filesystem::path& dir);

/// Opens `path` with `flags` (O_CREAT is added), creating it 0600, and sets it to 0600 (an older
/// file made under another umask is tightened). Returns the descriptor (close-on-exec), or -1
/// with errno set.
int open_private(const std::filesystem::path& path, int flags);

/// Writes all of `data` to `fd`, retrying short writes. Returns an error message naming `path`
/// and the real cause (errno, or how much was written), empty on success.
std::string write_fully(int fd, const char* data, size_t size, const std::filesystem::path& path);

/// Replaces `path`'s content with `content` in a 0600 file, its missing parents 0700. Returns an
/// error message, empty on success.
std::string write_private_file(const std::filesystem::path& path, const std::string& content);

} // namespace troupe
