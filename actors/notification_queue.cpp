#include "actors/notification_queue.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "actors/transcript.hpp"
#include "protocol/bounded_json.hpp"

namespace troupe {

namespace {

// Holds an flock for its lifetime.
class queue_lock {
public:
  queue_lock(const std::filesystem::path& path, int open_flags, int lock)
    : fd_(::open(path.c_str(), open_flags | O_CLOEXEC, 0600)) {
    if (fd_) {
      while (::flock(fd_.get(), lock) < 0 && errno == EINTR) {
      }
    }
  }
  int fd() const { return fd_.get(); }
  explicit operator bool() const { return static_cast<bool>(fd_); }

private:
  file_handle fd_; // closing the descriptor releases the lock
};

std::string read_from(int fd, size_t offset) {
  std::string data;
  char buffer[65536];
  auto at = static_cast<off_t>(offset);
  for (;;) {
    auto n = ::pread(fd, buffer, sizeof buffer, at);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    data.append(buffer, static_cast<size_t>(n));
    at += n;
  }
  return data;
}

} // namespace

expected<bool> append_notification(const std::filesystem::path& queue,
                                   const task_notification& notification, size_t cap) {
  queue_lock lock{queue, O_RDWR | O_CREAT | O_APPEND, LOCK_EX};
  if (!lock)
    return failure{"cannot open " + queue.string() + ": " + std::strerror(errno)};
  auto held = read_from(lock.fd(), 0);
  size_t entries = 0;
  for (char c : held)
    entries += c == '\n' ? 1 : 0;
  if (entries >= cap)
    return failure{"the notification queue " + queue.string() + " is full (" +
                   std::to_string(cap) +
                   " undelivered entries); nothing was added. The session reads it when it "
                   "runs; try again later"};
  auto line = nlohmann::json(notification).dump(-1, ' ', false,
                                                nlohmann::json::error_handler_t::replace) +
              "\n";
  // One write of the whole line (O_APPEND), then fsync: a reader never sees half an entry,
  // and an acknowledged notify survives a crash. The fsync runs after the lock is let go: it
  // flushes the line wherever the file's other writers have moved it, and holding the lock
  // through a flush made every writer (and the session's reader) queue behind each disk wait.
  auto n = ::write(lock.fd(), line.data(), line.size());
  if (n != static_cast<ssize_t>(line.size()))
    return failure{"cannot write " + queue.string() + ": " + std::strerror(errno)};
  ::flock(lock.fd(), LOCK_UN);
  if (::fsync(lock.fd()) < 0)
    return failure{"cannot sync " + queue.string() + ": " + std::strerror(errno)};
  return true;
}

expected<std::vector<task_notification>> read_notifications(const std::filesystem::path& queue,
                                                           size_t& offset, size_t* bad_lines) {
  std::vector<task_notification> out;
  std::error_code ec;
  if (!std::filesystem::exists(queue, ec))
    return out;
  queue_lock lock{queue, O_RDONLY, LOCK_SH};
  if (!lock)
    return failure{"cannot read " + queue.string() + ": " + std::strerror(errno)};
  auto data = read_from(lock.fd(), offset);
  size_t pos = 0;
  for (auto end = data.find('\n'); end != std::string::npos; end = data.find('\n', pos)) {
    auto parsed = parse_json_bounded(std::string_view{data}.substr(pos, end - pos),
                                     max_record_depth);
    pos = end + 1;
    if (parsed && parsed->is_object()) {
      try {
        out.push_back(parsed->get<task_notification>());
        continue;
      } catch (const nlohmann::json::exception&) {
      }
    }
    if (bad_lines != nullptr)
      ++*bad_lines;
  }
  offset += pos;
  return out;
}

void release_notifications(const std::filesystem::path& queue, size_t& offset,
                           const std::set<std::string>& undelivered) {
  queue_lock lock{queue, O_RDWR, LOCK_EX};
  if (!lock)
    return;
  auto data = read_from(lock.fd(), 0);
  if (offset > data.size())
    offset = data.size();
  std::string kept;
  for (size_t pos = 0; pos < offset;) {
    auto end = data.find('\n', pos);
    if (end == std::string::npos || end >= offset)
      break;
    auto line = data.substr(pos, end - pos + 1);
    pos = end + 1;
    auto parsed = parse_json_bounded(line, max_record_depth);
    if (!parsed || !parsed->is_object())
      continue;
    // An id of another type is no delivered entry's: reading it as a string would throw.
    if (auto id = parsed->find("id");
        id != parsed->end() && id->is_string() && undelivered.count(id->get<std::string>()))
      kept += line;
  }
  auto new_offset = kept.size();
  kept += data.substr(offset);
  if (kept.size() == data.size())
    return; // nothing delivered to drop
  // Rewritten in place under the lock: writers wait for it, readers see the new content. No
  // fsync: what is dropped is in the transcript, and an entry that comes back after a crash is
  // recognised by its id and skipped (the session's loop must not wait on the disk here).
  if (::pwrite(lock.fd(), kept.data(), kept.size(), 0) != static_cast<ssize_t>(kept.size()) ||
      ::ftruncate(lock.fd(), static_cast<off_t>(kept.size())) < 0)
    return;
  offset = new_offset;
}

} // namespace troupe
