#include "fuzz/targets.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

namespace troupe::fuzz {

void fuzz_check(bool holds, const char* what) {
  if (holds)
    return;
  std::fprintf(stderr, "fuzz check failed: %s\n", what);
  std::abort();
}

const char* scratch_file(const char* name) {
  static std::string dir = [] {
    std::string base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    std::string templ = base + "/troupe-fuzz-XXXXXX";
    fuzz_check(mkdtemp(templ.data()) != nullptr, "mkdtemp");
    return templ;
  }();
  static std::map<std::string, std::string> paths;
  auto& path = paths[name];
  if (path.empty())
    path = dir + "/" + name;
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
