#include "store/session_lock.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "protocol/private_files.hpp"

namespace troupe {

namespace {

struct flock whole_file_write_lock() {
  struct flock whole{};
  whole.l_type = F_WRLCK;
  whole.l_whence = SEEK_SET;
  return whole;
}

} // namespace

expected<std::shared_ptr<session_lock>> session_lock::take(const session_paths& session) {
  // Only its owner may look inside (whole tool outputs hold secrets); an older session made
  // under a looser umask is tightened here.
  if (auto problem = make_private_dirs(session.dir()); !problem.empty())
    return failure{problem};
  // Close-on-exec: a tool's background process must not keep the session locked after troupe.
  int fd = open_private(session.lock(), O_RDWR);
  if (fd < 0)
    return failure{"cannot open " + session.lock().string() + ": " + std::strerror(errno)};
  // An open-file-description lock: released when the descriptor closes (or the process dies),
  // and testable without taking it (see session_running).
  auto whole = whole_file_write_lock();
  if (::fcntl(fd, F_OFD_SETLK, &whole) != 0) {
    ::close(fd);
    return failure{"session " + session.id() +
                   " is running in another process; send it a message with troupe notify " +
                   session.id() + ", or --fork it"};
  }
  return std::shared_ptr<session_lock>{new session_lock{fd}};
}

session_lock::~session_lock() {
  if (fd_ >= 0)
    ::close(fd_); // releases the lock
}

bool session_running(const session_paths& session) {
  file_handle fd{::open(session.lock().c_str(), O_RDWR | O_CLOEXEC)};
  if (!fd)
    return false; // never run by a troupe that locks
  auto whole = whole_file_write_lock();
  return ::fcntl(fd.get(), F_OFD_GETLK, &whole) == 0 && whole.l_type != F_UNLCK;
}

} // namespace troupe
