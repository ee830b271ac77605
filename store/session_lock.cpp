#include "store/session_lock.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "protocol/private_files.hpp"
#include "store/state_files.hpp"

namespace troupe {

namespace {

struct flock whole_file_write_lock() {
  struct flock whole{};
  whole.l_type = F_WRLCK;
  whole.l_whence = SEEK_SET;
  return whole;
}

// Opens (0600, in a 0700 directory) and locks `lock`; -1 with the reason in `problem`, which is
// empty when another process holds it.
int lock_file(const std::filesystem::path& dir, const std::filesystem::path& lock,
              std::string& problem) {
  // Only its owner may look inside (whole tool outputs hold secrets); an older directory made
  // under a looser umask is tightened here.
  if (problem = make_private_dirs(dir); !problem.empty())
    return -1;
  // Close-on-exec: a tool's background process must not keep the session locked after troupe.
  int fd = open_private(lock, O_RDWR);
  if (fd < 0) {
    problem = "cannot open " + lock.string() + ": " + std::strerror(errno);
    return -1;
  }
  // An open-file-description lock: released when the descriptor closes (or the process dies),
  // and testable without taking it (see lock_held).
  auto whole = whole_file_write_lock();
  if (::fcntl(fd, F_OFD_SETLK, &whole) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

} // namespace

expected<std::shared_ptr<session_lock>> session_lock::take(const session_paths& session) {
  std::string problem;
  int fd = lock_file(session.dir(), session.lock(), problem);
  if (fd < 0)
    return failure{!problem.empty()
                     ? problem
                     : "session " + session.id() +
                         " is running in another process; send it a message with troupe notify " +
                         session.id() + ", or --fork it"};
  return std::shared_ptr<session_lock>{new session_lock{fd}};
}

expected<std::shared_ptr<session_lock>> session_lock::take(const fleet_paths& fleet) {
  std::string problem;
  int fd = lock_file(fleet.dir(), fleet.lock(), problem);
  if (fd < 0)
    return failure{!problem.empty() ? problem
                                    : "fleet " + fleet.id() +
                                        " is running in another process (troupe fleet status " +
                                        fleet.id() + " shows how far it is)"};
  return std::shared_ptr<session_lock>{new session_lock{fd}};
}

session_lock::~session_lock() {
  if (fd_ >= 0)
    ::close(fd_); // releases the lock
}

bool session_running(const session_paths& session) {
  // `troupe run --resume` of a fleet's task takes the task's own lock.
  if (lock_held(session.lock()))
    return true;
  if (auto fleet = fleet_of(session)) {
    auto info = read_session_info(session.info());
    return info && info->state == "running" && lock_held(fleet->lock());
  }
  return false;
}

bool lock_held(const std::filesystem::path& path) {
  file_handle fd{::open(path.c_str(), O_RDWR | O_CLOEXEC)};
  if (!fd)
    return false; // never run by a troupe that locks
  auto whole = whole_file_write_lock();
  return ::fcntl(fd.get(), F_OFD_GETLK, &whole) == 0 && whole.l_type != F_UNLCK;
}

} // namespace troupe
