// Files only their owner may read, whatever the umask.

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/file_modes.hpp"
#include "support/test_support.hpp"
#include "protocol/private_files.hpp"

using namespace troupe;
using namespace troupe::test;

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

TEST_CASE("a whole read says why it could not read") {
  temp_dir dir;
  std::string content = "left as it was";
  CHECK(read_whole_file(dir / "missing", content) ==
        "cannot read " + (dir / "missing").string() + ": no such file");
  CHECK(read_whole_file(dir.path(), content) == dir.path().string() + " is not a regular file");
  CHECK(content == "left as it was");
  write_file(dir / "f", std::string("a\0b", 3));
  CHECK(read_whole_file(dir / "f", content).empty());
  CHECK(content == std::string("a\0b", 3));
}
