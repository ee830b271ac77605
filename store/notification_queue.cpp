#include "store/notification_queue.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "store/ids.hpp"
#include "protocol/bounded_json.hpp"
#include "protocol/private_files.hpp"

namespace troupe {

namespace {

constexpr size_t chunk_size = 65536;

// Holds an flock for its lifetime.
// Compaction replaces the file by a new one (renamed over it), so a lock is held only once the
// locked descriptor is still the file at `path`: one that waited on the replaced file opens the
// path again.
class queue_lock {
public:
  queue_lock(const std::filesystem::path& path, int open_flags, int lock) {
    for (int attempt = 0; attempt < 100; ++attempt) {
      fd_ = file_handle{(open_flags & O_CREAT) != 0 ? open_private(path, open_flags)
                                                    : ::open(path.c_str(), open_flags | O_CLOEXEC)};
      if (!fd_)
        return;
      while (::flock(fd_.get(), lock) < 0 && errno == EINTR) {
      }
      struct stat held{}, named{};
      if (::fstat(fd_.get(), &held) == 0 && ::stat(path.c_str(), &named) == 0 &&
          held.st_ino == named.st_ino && held.st_dev == named.st_dev)
        return;
    }
    fd_ = file_handle{-1};
    errno = EAGAIN;
  }
  int fd() const { return fd_.get(); }
  explicit operator bool() const { return static_cast<bool>(fd_); }

private:
  file_handle fd_; // closing the descriptor releases the lock
};

ssize_t pread_some(int fd, char* buffer, size_t size, size_t at) {
  for (;;) {
    auto n = ::pread(fd, buffer, size, static_cast<off_t>(at));
    if (n < 0 && errno == EINTR)
      continue;
    return n;
  }
}

// Calls on_line(start, end, text) for each whole line from `from` on (`end` is just past its
// newline; `text` without the newline, null when the line is longer than `max_line`: it is
// streamed past, never held). Stops when on_line returns false. Returns where the next line
// starts: past the last whole line taken, before an unterminated tail.
template <class On_line>
size_t scan_lines(int fd, size_t from, size_t until, size_t max_line, On_line&& on_line) {
  std::string line;
  bool oversized = false;
  size_t start = from;
  std::string buffer(chunk_size, '\0');
  for (size_t at = from; at < until;) {
    auto n = pread_some(fd, buffer.data(), std::min(chunk_size, until - at), at);
    if (n <= 0)
      break;
    auto got = static_cast<size_t>(n);
    for (size_t i = 0; i < got;) {
      auto* newline = static_cast<const char*>(std::memchr(buffer.data() + i, '\n', got - i));
      size_t piece_end = newline != nullptr ? static_cast<size_t>(newline - buffer.data()) : got;
      if (!oversized) {
        if (line.size() + (piece_end - i) > max_line) {
          oversized = true;
          std::string{}.swap(line);
        } else {
          line.append(buffer.data() + i, piece_end - i);
        }
      }
      if (newline == nullptr)
        break;
      size_t end = at + piece_end + 1;
      if (!on_line(start, end, oversized ? nullptr : &line))
        return start;
      start = end;
      line.clear();
      oversized = false;
      i = piece_end + 1;
    }
    at += got;
  }
  return start;
}

std::optional<task_notification> parse_entry(const std::string& line) {
  auto parsed = parse_json_bounded(line, max_record_depth);
  if (!parsed || !parsed->is_object())
    return std::nullopt;
  try {
    return parsed->get<task_notification>();
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

// Appends the bytes [start, end) of `fd` to the set-aside file; an error message on failure (the
// set-aside file is then cut back to what it was).
class set_aside_file {
public:
  explicit set_aside_file(std::filesystem::path path) : path_(std::move(path)) {}

  std::string copy(int fd, size_t start, size_t end) {
    if (!out_) {
      out_ = file_handle{open_private(path_, O_WRONLY | O_APPEND)};
      if (!out_)
        return "cannot open " + path_.string() + ": " + std::strerror(errno);
    }
    struct stat before{};
    if (::fstat(out_.get(), &before) != 0)
      return "cannot read " + path_.string() + ": " + std::strerror(errno);
    std::string buffer(std::min(chunk_size, end - start), '\0');
    for (size_t at = start; at < end;) {
      auto n = pread_some(fd, buffer.data(), std::min(buffer.size(), end - at), at);
      auto problem = n <= 0 ? std::string{"the queue changed while it was read"}
                            : write_fully(out_.get(), buffer.data(), static_cast<size_t>(n),
                                          path_);
      if (!problem.empty()) {
        (void)::ftruncate(out_.get(), before.st_size);
        return problem;
      }
      at += static_cast<size_t>(n);
    }
    written_ = true;
    return {};
  }

  // Makes what was set aside durable before the queue lets go of it.
  std::string sync() {
    if (written_ && ::fsync(out_.get()) != 0)
      return "cannot sync " + path_.string() + ": " + std::strerror(errno);
    return {};
  }

private:
  std::filesystem::path path_;
  file_handle out_;
  bool written_ = false;
};

} // namespace

expected<bool> append_notification(const std::filesystem::path& queue,
                                   const task_notification& notification, size_t cap) {
  queue_lock lock{queue, O_RDWR | O_CREAT | O_APPEND, LOCK_EX};
  if (!lock)
    return failure{"cannot open " + queue.string() + ": " + std::strerror(errno)};
  struct stat before{};
  if (::fstat(lock.fd(), &before) != 0)
    return failure{"cannot read " + queue.string() + ": " + std::strerror(errno)};
  auto size = static_cast<size_t>(before.st_size);
  // Counted in chunks: the queue may hold a hundred large entries.
  size_t entries = 0;
  char last = '\n';
  std::string buffer(chunk_size, '\0');
  for (size_t at = 0; at < size;) {
    auto n = pread_some(lock.fd(), buffer.data(), std::min(chunk_size, size - at), at);
    if (n <= 0)
      break;
    for (ssize_t i = 0; i < n; ++i)
      entries += buffer[static_cast<size_t>(i)] == '\n' ? 1 : 0;
    last = buffer[static_cast<size_t>(n - 1)];
    at += static_cast<size_t>(n);
  }
  if (entries >= cap)
    return failure{"the notification queue " + queue.string() + " is full (" +
                   std::to_string(cap) +
                   " undelivered entries); nothing was added. The session reads it when it "
                   "runs; try again later"};
  auto line = nlohmann::json(notification).dump(-1, ' ', false,
                                                nlohmann::json::error_handler_t::replace) +
              "\n";
  // A writer that died mid-write left an unterminated line (writers hold the lock while they
  // write, so no live one is behind it): it is ended first, and readers set it aside.
  if (last != '\n')
    line.insert(0, "\n");
  // One write of the whole line (O_APPEND), then fsync: a reader never sees half an entry,
  // and an acknowledged notify survives a crash. A write that fails part-way (disk full) is
  // taken back: the file stays as it was. The fsync runs after the lock is let go: it flushes
  // the line wherever the file's other writers have moved it, and holding the lock through a
  // flush made every writer (and the session's reader) queue behind each disk wait.
  if (auto problem = write_fully(lock.fd(), line.data(), line.size(), queue); !problem.empty()) {
    if (::ftruncate(lock.fd(), before.st_size) != 0)
      return failure{problem + "; and cannot take the part written back (" +
                     std::strerror(errno) + "): readers set it aside"};
    return failure{problem + "; nothing was added"};
  }
  ::flock(lock.fd(), LOCK_UN);
  if (::fsync(lock.fd()) < 0)
    return failure{"cannot sync " + queue.string() + ": " + std::strerror(errno)};
  return true;
}

expected<std::vector<task_notification>> read_notifications(const std::filesystem::path& queue,
                                                           size_t& offset, size_t* bad_lines,
                                                           size_t max_line,
                                                           std::string* problem_out) {
  std::vector<task_notification> out;
  std::error_code ec;
  if (!std::filesystem::exists(queue, ec))
    return out;
  queue_lock lock{queue, O_RDONLY, LOCK_SH};
  if (!lock)
    return failure{"cannot read " + queue.string() + ": " + std::strerror(errno)};
  struct stat now{};
  if (::fstat(lock.fd(), &now) != 0)
    return failure{"cannot read " + queue.string() + ": " + std::strerror(errno)};
  set_aside_file aside{set_aside_path(queue)};
  std::string problem;
  offset = scan_lines(lock.fd(), offset, static_cast<size_t>(now.st_size), max_line,
                      [&](size_t start, size_t end, const std::string* text) {
                        if (text != nullptr)
                          if (auto entry = parse_entry(*text)) {
                            out.push_back(std::move(*entry));
                            return true;
                          }
                        problem = aside.copy(lock.fd(), start, end);
                        if (!problem.empty())
                          return false; // it stays in the queue, and what follows waits
                        if (bad_lines != nullptr)
                          ++*bad_lines;
                        return true;
                      });
  if (problem.empty())
    problem = aside.sync();
  if (!problem.empty() && problem_out != nullptr)
    *problem_out = "cannot set aside an unreadable line of " + queue.string() +
                   " (it stays there; later entries wait for it): " + problem;
  return out;
}

void release_notifications(const std::filesystem::path& queue, size_t& offset,
                           const std::set<std::string>& undelivered, size_t max_line) {
  queue_lock lock{queue, O_RDWR, LOCK_EX};
  if (!lock)
    return;
  struct stat now{};
  if (::fstat(lock.fd(), &now) != 0)
    return;
  auto size = static_cast<size_t>(now.st_size);
  if (offset > size)
    offset = size;
  // Rewritten aside and renamed over the queue, under its lock: the queue on disk is at every
  // moment either the old file or the whole new one, so a crash mid-way never cuts a line that
  // is still to be delivered. Lockers that waited on the old file open the new one (queue_lock).
  auto temp = queue.parent_path() / (queue.filename().string() + ".compact." + random_hex(6));
  file_handle out{open_private(temp, O_WRONLY | O_CREAT | O_EXCL)};
  if (!out)
    return; // the next release tries again
  size_t kept = 0;
  bool dropped = false;
  std::string problem;
  scan_lines(lock.fd(), 0, offset, max_line,
             [&](size_t start, size_t end, const std::string* text) {
               auto entry = text != nullptr ? parse_entry(*text) : std::nullopt;
               if (!entry || !undelivered.count(entry->id)) {
                 dropped = true;
                 return true;
               }
               auto line = *text + "\n";
               problem = write_fully(out.get(), line.data(), line.size(), temp);
               kept += end - start;
               return problem.empty();
             });
  std::string buffer(chunk_size, '\0');
  for (size_t from = offset; dropped && problem.empty() && from < size;) {
    auto n = pread_some(lock.fd(), buffer.data(), std::min(chunk_size, size - from), from);
    if (n <= 0) {
      problem = "cannot read " + queue.string();
      break;
    }
    problem = write_fully(out.get(), buffer.data(), static_cast<size_t>(n), temp);
    from += static_cast<size_t>(n);
  }
  // Nothing delivered to drop, or the disk refused: the queue stays as it is.
  if (!dropped || !problem.empty() || ::fsync(out.get()) != 0 ||
      ::rename(temp.c_str(), queue.c_str()) != 0) {
    std::error_code ec;
    std::filesystem::remove(temp, ec);
    return;
  }
  offset = kept;
}

} // namespace troupe
