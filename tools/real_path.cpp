#include "tools/real_path.hpp"

#include "protocol/private_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

namespace troupe {

namespace {

namespace fs = std::filesystem;

// Pushes the components of `path` so that the first comes off the back first.
void push_components(std::vector<std::string>& todo, const fs::path& path) {
  std::vector<std::string> parts;
  for (auto& part : path.relative_path())
    parts.push_back(part.string());
  todo.insert(todo.end(), parts.rbegin(), parts.rend());
}

std::string error_text(int error) { return std::strerror(error); }

std::string too_many_links(const fs::path& path) {
  return "cannot resolve " + path.string() + ": more than " + std::to_string(max_symlink_hops) +
         " symbolic links (a loop?)";
}

// The target of the link `name` in directory `dir` (AT_FDCWD: `name` is a path).
expected<std::string> link_target(int dir, const std::string& name) {
  std::string target(4096, '\0');
  auto n = ::readlinkat(dir, name.c_str(), target.data(), target.size());
  if (n < 0)
    return failure{"cannot read the symbolic link " + name + ": " + error_text(errno)};
  target.resize(static_cast<size_t>(n));
  return target;
}

int open_root() { return ::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC); }

} // namespace

expected<fs::path> real_location(const fs::path& path) {
  std::vector<std::string> todo;
  push_components(todo, path);
  fs::path real = "/";
  bool missing = false;
  int hops = 0;
  while (!todo.empty()) {
    auto part = std::move(todo.back());
    todo.pop_back();
    if (part.empty() || part == ".")
      continue;
    if (part == "..") {
      real = real.parent_path();
      continue;
    }
    auto next = real / part;
    struct stat st {};
    if (missing || ::lstat(next.c_str(), &st) != 0) {
      if (!missing && errno != ENOENT && errno != ENOTDIR)
        return failure{"cannot resolve " + next.string() + ": " + error_text(errno)};
      missing = true; // nothing below a missing name can be a link
      real = std::move(next);
      continue;
    }
    if (S_ISLNK(st.st_mode)) {
      if (++hops > max_symlink_hops)
        return failure{too_many_links(path)};
      auto target = link_target(AT_FDCWD, next.string());
      if (!target)
        return failure{target.error()};
      if (!target->empty() && (*target)[0] == '/')
        real = "/";
      push_components(todo, *target);
      continue;
    }
    real = std::move(next);
  }
  return real;
}

bool lies_within(const fs::path& path, const fs::path& root) {
  auto relative = path.lexically_relative(root);
  return !relative.empty() && *relative.begin() != "..";
}

bool is_within(const fs::path& real, const fs::path& root) {
  auto real_root = real_location(root);
  return lies_within(real, real_root ? *real_root : root.lexically_normal());
}

expected<resolved_file> resolved_file::resolve(const fs::path& path, bool create_directories) {
  resolved_file file;
  file.dir_ = open_root();
  if (file.dir_ < 0)
    return failure{"cannot open /: " + error_text(errno)};
  file.real_dir_ = "/";
  std::vector<std::string> todo;
  push_components(todo, path);
  int hops = 0;
  auto enter = [&](const std::string& part) -> bool {
    int next = ::openat(file.dir_, part.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0)
      return false;
    ::close(file.dir_);
    file.dir_ = next;
    file.real_dir_ = part == ".." ? file.real_dir_.parent_path() : file.real_dir_ / part;
    return true;
  };
  while (!todo.empty()) {
    auto part = std::move(todo.back());
    todo.pop_back();
    if (part.empty() || part == ".")
      continue;
    if (part == "..") {
      if (file.real_dir_ != "/" && !enter(part))
        return failure{"cannot resolve " + path.string() + ": " + error_text(errno)};
      continue;
    }
    bool last = todo.empty();
    auto shown = file.real_dir_ / part;
    struct stat st {};
    if (::fstatat(file.dir_, part.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT)
        return failure{"cannot resolve " + shown.string() + ": " + error_text(errno)};
      if (last) {
        file.name_ = part; // the file itself may be missing: it is to be created
        break;
      }
      if (!create_directories)
        return failure{"cannot read " + path.string() + ": no such file"};
      if (::mkdirat(file.dir_, part.c_str(), 0777) != 0 && errno != EEXIST)
        return failure{"cannot create directory " + shown.string() + ": " + error_text(errno)};
    } else if (S_ISLNK(st.st_mode)) {
      if (++hops > max_symlink_hops)
        return failure{too_many_links(path)};
      auto target = link_target(file.dir_, part);
      if (!target)
        return failure{target.error()};
      if (!target->empty() && (*target)[0] == '/') {
        int root = open_root();
        if (root < 0)
          return failure{"cannot open /: " + error_text(errno)};
        ::close(file.dir_);
        file.dir_ = root;
        file.real_dir_ = "/";
      }
      push_components(todo, *target);
      continue;
    } else if (last) {
      file.name_ = part;
      break;
    }
    // O_NOFOLLOW: a directory swapped for a link since the look above fails here instead of
    // being followed.
    if (!enter(part))
      return failure{errno == ENOTDIR || errno == ELOOP
                       ? shown.string() + " is not a directory"
                       : "cannot open directory " + shown.string() + ": " + error_text(errno)};
  }
  // The loop stops at the file's own name; it ends without one only for "/" or a path ending
  // in "..".
  if (file.name_.empty())
    return failure{path.string() + " is a directory"};
  return expected<resolved_file>{std::move(file)};
}

resolved_file::resolved_file(resolved_file&& other) noexcept
  : dir_(other.dir_), real_dir_(std::move(other.real_dir_)), name_(std::move(other.name_)) {
  other.dir_ = -1;
}

resolved_file& resolved_file::operator=(resolved_file&& other) noexcept {
  if (this != &other) {
    if (dir_ >= 0)
      ::close(dir_);
    dir_ = other.dir_;
    other.dir_ = -1;
    real_dir_ = std::move(other.real_dir_);
    name_ = std::move(other.name_);
  }
  return *this;
}

resolved_file::~resolved_file() {
  if (dir_ >= 0)
    ::close(dir_);
}

std::string shown_path(const fs::path& path, const resolved_file& file) {
  auto real = file.real_path();
  return real == path ? path.string() : path.string() + " (at " + real.string() + ")";
}

bool resolved_file::exists() const {
  struct stat st {};
  return ::fstatat(dir_, name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

std::string resolved_file::read(std::string& content) const {
  auto shown = real_path().string();
  // O_NONBLOCK: a FIFO must not block the open; only regular files are read.
  int fd = ::openat(dir_, name_.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return "cannot read " + shown + ": no such file";
    if (errno == ELOOP)
      return "cannot read " + shown + ": it was replaced by a symbolic link";
    return "cannot read " + shown + ": " + error_text(errno);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return shown + " is not a regular file";
  }
  content.clear();
  char buffer[65536];
  for (;;) {
    auto n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      auto error = errno;
      ::close(fd);
      return "cannot read " + shown + ": " + error_text(error);
    }
    if (n == 0)
      break;
    content.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return {};
}

namespace {

// Writes content over the file open (for writing) on fd, and closes it.
std::string write_in_place(int fd, const std::string& content, const std::string& shown) {
  auto problem = ::ftruncate(fd, 0) == 0
                   ? write_fully(fd, content.data(), content.size(), shown)
                   : "writing " + shown + " failed: " + error_text(errno);
  if (::close(fd) != 0 && problem.empty())
    problem = "writing " + shown + " failed: " + error_text(errno);
  return problem;
}

} // namespace

std::string resolved_file::write(const std::string& content) const {
  auto shown = real_path().string();
  struct stat st {};
  bool existed = ::fstatat(dir_, name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (existed && S_ISDIR(st.st_mode))
    return shown + " is a directory";
  if (existed && S_ISLNK(st.st_mode))
    return "cannot write " + shown + ": it was replaced by a symbolic link";
  if (existed && !S_ISREG(st.st_mode))
    return shown + " is not a regular file";
  if (existed) {
    // The rename below needs only the directory to be writable; a read-only file stays so.
    int probe = ::openat(dir_, name_.c_str(), O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (probe < 0)
      return "cannot open " + shown + " for writing: " + error_text(errno);
    // A file someone else owns, or one with other names (hard links), is written where it is:
    // a new file renamed over it would take its owner, or split it from its other names.
    if (st.st_uid != ::geteuid() || st.st_nlink > 1)
      return write_in_place(probe, content, shown);
    ::close(probe);
  }
  std::string temporary;
  int fd = -1;
  auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    temporary = ".troupe-write-" + std::to_string(::getpid()) + "-" +
                std::to_string(stamp + attempt) + ".tmp";
    fd = ::openat(dir_, temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  0666);
    if (fd < 0 && errno != EEXIST)
      break;
  }
  if (fd < 0 && existed && (errno == EACCES || errno == EPERM || errno == EROFS)) {
    // A directory nobody may add to, around a file that may be written: written where it is.
    int in_place = ::openat(dir_, name_.c_str(), O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (in_place >= 0)
      return write_in_place(in_place, content, shown);
  }
  if (fd < 0)
    return "cannot write " + shown + ": " + error_text(errno);
  auto discard = [&](std::string problem) {
    if (fd >= 0)
      ::close(fd);
    ::unlinkat(dir_, temporary.c_str(), 0);
    return problem;
  };
  auto fail = [&](int error) {
    return discard("writing " + shown + " failed: " + error_text(error));
  };
  if (existed && ::fchmod(fd, st.st_mode & 07777) != 0)
    return fail(errno);
  if (auto problem = write_fully(fd, content.data(), content.size(), shown); !problem.empty())
    return discard(problem);
  int closed = ::close(fd);
  fd = -1;
  if (closed != 0)
    return fail(errno);
  if (::renameat(dir_, temporary.c_str(), dir_, name_.c_str()) != 0)
    return fail(errno);
  return {};
}

std::string moved_since_approval(const std::filesystem::path& path,
                                 const std::filesystem::path& real, const std::string& approved) {
  if (approved.empty() ||
      real.lexically_normal() == std::filesystem::path{approved}.lexically_normal())
    return {};
  return path.string() + " now leads to " + real.string() + ", not to " + approved +
         " as when it was allowed (a link changed meanwhile); the call was not carried out";
}

} // namespace troupe
