// Files only their owner may read, whatever the umask.

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/test_support.hpp"
#include "tools/private_files.hpp"

using namespace troupe;
using namespace troupe::test;

namespace {

unsigned mode_of(const std::filesystem::path& path) {
  struct stat st{};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

// Sets the umask for the object's lifetime.
struct umask_guard {
  explicit umask_guard(mode_t mask) : saved(::umask(mask)) {}
  ~umask_guard() { ::umask(saved); }
  mode_t saved;
};

} // namespace

TEST_CASE("private directories are 0700 and private files 0600 under any umask") {
  temp_dir dir;
  for (mode_t mask : {mode_t{0}, mode_t{022}, mode_t{0277}}) {
    umask_guard guard{mask};
    auto root = dir / ("m" + std::to_string(mask));
    auto file = root / "a/b/out.txt";
    REQUIRE(write_private_file(file, "SECRET=hunter2").empty());
    CHECK(read_file(file) == "SECRET=hunter2");
    CHECK(mode_of(file) == 0600);
    CHECK(mode_of(root / "a/b") == 0700);
    CHECK(mode_of(root / "a") == 0700);
    CHECK(mode_of(root) == 0700);
  }
}

TEST_CASE("an older file or directory made under a looser umask is tightened") {
  temp_dir dir;
  umask_guard guard{0};
  std::filesystem::create_directories(dir / "old");
  write_file(dir / "old/log.txt", "x");
  ::chmod((dir / "old").c_str(), 0755);
  ::chmod((dir / "old/log.txt").c_str(), 0644);
  REQUIRE(make_private_dirs(dir / "old").empty());
  CHECK(mode_of(dir / "old") == 0700);
  int fd = open_private(dir / "old/log.txt", O_WRONLY | O_APPEND);
  REQUIRE(fd >= 0);
  ::close(fd);
  CHECK(mode_of(dir / "old/log.txt") == 0600);
}

TEST_CASE("a write that fails part-way names its cause, never 'Success'") {
  temp_dir dir;
  auto path = dir / "f.txt";
  int fd = open_private(path, O_WRONLY | O_TRUNC);
  REQUIRE(fd >= 0);
  std::string problem;
  {
    file_size_limit full{1000};
    problem = write_fully(fd, std::string(5000, 'x').data(), 5000, path);
  }
  ::close(fd);
  CHECK(problem.find("File too large") != std::string::npos);
  CHECK(problem.find("short write: 1000 of 5000 bytes") != std::string::npos);
  CHECK(problem.find("Success") == std::string::npos);
}
