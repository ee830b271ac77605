#pragma once
// Files only their owner may read: everything troupe keeps under a session's directory (whole
// tool outputs, transcripts, task logs hold secrets). Directories are 0700 and files 0600
// whatever the process's umask: modes are given at creation and set again with (f)chmod.
// The one file primitive below every floor that writes (tools, the session store), so it sits
// with the types.

#include <cstddef>
#include <filesystem>
#include <string>
#include <utility>

namespace troupe {

/// Owns a file descriptor and closes it once.
class file_handle {
public:
  file_handle() = default;
  explicit file_handle(int fd) : fd_(fd) {}
  file_handle(const file_handle&) = delete;
  file_handle& operator=(const file_handle&) = delete;
  file_handle(file_handle&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  file_handle& operator=(file_handle&& other) noexcept;
  ~file_handle();

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }

private:
  int fd_ = -1;
};

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

/// Reads the whole regular file at `path` into `content`. Returns an error message (no such
/// file, not a regular file, permission denied), empty on success.
std::string read_whole_file(const std::filesystem::path& path, std::string& content);

/// Replaces `path`'s content with `content` in a 0600 file, its missing parents 0700. Returns an
/// error message, empty on success.
std::string write_private_file(const std::filesystem::path& path, const std::string& content);

/// Appends `data` to `fd`, or leaves the file as it was: a write that fails part-way (disk full)
/// is taken back, so no half line stays behind to swallow the next one. Returns an error
/// message naming `path`, empty on success.
std::string append_or_take_back(int fd, const std::string& data,
                                const std::filesystem::path& path);

/// Whether the last byte of the file behind `fd` is a newline (an empty file counts as ended).
bool ends_with_newline(int fd);

} // namespace troupe
