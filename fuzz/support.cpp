#include "fuzz/targets.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

namespace troupe::fuzz {

void fuzz_check(bool holds, const char* what) {
  if (holds)
    return;
  std::fprintf(stderr, "fuzz check failed: %s\n", what);
  std::abort();
}

namespace {

// The process's scratch directory, removed with what is in it when the process exits.
struct scratch_dir {
  std::string path;
  scratch_dir() {
    std::string base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    path = base + "/troupe-fuzz-XXXXXX";
    fuzz_check(mkdtemp(path.data()) != nullptr, "mkdtemp");
  }
  ~scratch_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

} // namespace

const char* scratch_file(const char* name) {
  static scratch_dir dir;
  static std::map<std::string, std::string> paths;
  auto& path = paths[name];
  if (path.empty())
    path = dir.path + "/" + name;
  return path.c_str();
}

void write_scratch(const char* path, const uint8_t* data, size_t size) {
  int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  fuzz_check(fd >= 0, "open scratch file");
  size_t done = 0;
  while (done < size) {
    auto n = ::write(fd, data + done, size - done);
    fuzz_check(n > 0, "write scratch file");
    done += static_cast<size_t>(n);
  }
  ::close(fd);
}

} // namespace troupe::fuzz
