#include "protocol/private_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace troupe {

file_handle& file_handle::operator=(file_handle&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

file_handle::~file_handle() {
  if (fd_ >= 0)
    ::close(fd_);
}

std::string make_private_dirs(const std::filesystem::path& dir) {
  if (dir.empty())
    return {};
  // The missing components, deepest last: each is made 0700 (mkdir's mode is cut by the umask,
  // so it is set again with chmod).
  std::vector<std::filesystem::path> missing;
  std::error_code ec;
  for (auto p = dir; !p.empty() && !std::filesystem::exists(p, ec); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path())
      break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), private_dir_mode) != 0 && errno != EEXIST)
      return "cannot create " + it->string() + ": " + std::strerror(errno);
    ::chmod(it->c_str(), private_dir_mode);
  }
  ::chmod(dir.c_str(), private_dir_mode); // one of another owner stays as it is
  return {};
}

int open_private(const std::filesystem::path& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_CREAT | O_CLOEXEC, private_file_mode);
  if (fd >= 0) {
    int saved = errno;
    ::fchmod(fd, private_file_mode); // a file of another owner stays as it is
    errno = saved;
  }
  return fd;
}

std::string write_fully(int fd, const char* data, size_t size, const std::filesystem::path& path) {
  size_t done = 0;
  while (done < size) {
    errno = 0;
    auto n = ::write(fd, data + done, size - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      auto cause = n < 0 && errno != 0 ? std::string{std::strerror(errno)} : "no space";
      return "cannot write " + path.string() + ": " + cause + " (short write: " +
             std::to_string(done) + " of " + std::to_string(size) + " bytes)";
    }
    done += static_cast<size_t>(n);
  }
  return {};
}

std::string write_private_file(const std::filesystem::path& path, const std::string& content) {
  if (path.has_parent_path())
    if (auto problem = make_private_dirs(path.parent_path()); !problem.empty())
      return problem;
  int fd = open_private(path, O_WRONLY | O_TRUNC);
  if (fd < 0)
    return "cannot open " + path.string() + " for writing: " + std::strerror(errno);
  auto problem = write_fully(fd, content.data(), content.size(), path);
  if (::close(fd) != 0 && problem.empty())
    problem = "cannot write " + path.string() + ": " + std::strerror(errno);
  return problem;
}

std::string read_whole_file(const std::filesystem::path& path, std::string& content) {
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status))
    return "cannot read " + path.string() + ": no such file";
  if (!std::filesystem::is_regular_file(status))
    return path.string() + " is not a regular file";
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return "cannot read " + path.string() + ": permission denied";
  std::ostringstream buffer;
  buffer << in.rdbuf();
  content = std::move(buffer).str();
  return {};
}

std::string append_or_take_back(int fd, const std::string& data,
                                const std::filesystem::path& path) {
  struct stat before{};
  if (::fstat(fd, &before) != 0)
    return "cannot write " + path.string() + ": " + std::strerror(errno);
  auto problem = write_fully(fd, data.data(), data.size(), path);
  if (problem.empty())
    return {};
  if (::ftruncate(fd, before.st_size) != 0)
    return problem + "; and cannot take the part written back: " + std::strerror(errno);
  return problem + "; the file is as it was";
}

bool ends_with_newline(int fd) {
  struct stat st{};
  if (::fstat(fd, &st) != 0 || st.st_size == 0)
    return true;
  char last = '\n';
  return ::pread(fd, &last, 1, st.st_size - 1) != 1 || last == '\n';
}

} // namespace troupe
