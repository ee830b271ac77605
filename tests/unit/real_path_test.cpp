#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include "support/test_support.hpp"
#include "tools/real_path.hpp"

using namespace troupe;
using namespace troupe::test;
namespace fs = std::filesystem;

TEST_CASE("real_location follows every link, a dangling last one included") {
  temp_dir dir;
  fs::create_directories(dir / "a/b");
  fs::create_directories(dir / "out");
  fs::create_directory_symlink(dir / "out", dir / "a/to_out");
  fs::create_symlink("to_out", dir / "a/chain");
  fs::create_symlink("../a/b", dir / "out/back"); // relative, with ..
  fs::create_symlink(dir / "out/missing.txt", dir / "a/dangling");
  fs::create_symlink("self", dir / "a/self");
  auto real = [&](const fs::path& p) { return *real_location(p); };
  auto root = real(dir.path());
  CHECK(real(dir / "a/b/new/file") == root / "a/b/new/file");
  CHECK(real(dir / "a/to_out/x") == root / "out/x");
  CHECK(real(dir / "a/chain/x") == root / "out/x");
  CHECK(real(dir / "a/chain/back/y") == root / "a/b/y");
  CHECK(real(dir / "a/dangling") == root / "out/missing.txt");
  CHECK(real("/proc/self/root" + (dir / "a/to_out").string()) == root / "out");
  auto loop = real_location(dir / "a/self/x");
  REQUIRE_FALSE(loop);
  CHECK(loop.error().find("symbolic links") != std::string::npos);
  CHECK(is_within(root / "a/b", dir / "a"));
  CHECK_FALSE(is_within(root / "out", dir / "a"));
  CHECK_FALSE(is_within(root / "ab", dir / "a"));
}

TEST_CASE("a resolved file is written where it was resolved, whatever is swapped in later") {
  temp_dir dir;
  fs::create_directories(dir / "work/sub");
  fs::create_directories(dir / "out");
  auto file = resolved_file::resolve(dir / "work/sub/f.txt", false);
  REQUIRE(file);
  // The directory is replaced by a link to outside after the look-up: the write still goes
  // to the directory that was resolved (now named moved), never through the new link.
  fs::rename(dir / "work/sub", dir / "work/moved");
  fs::create_directory_symlink(dir / "out", dir / "work/sub");
  CHECK(file->write("content") == "");
  CHECK(read_file(dir / "work/moved/f.txt") == "content");
  CHECK_FALSE(fs::exists(dir / "out/f.txt"));
  // The name itself turned into a link to outside: refused, the target untouched.
  write_file(dir / "out/victim.txt", "original");
  auto named = resolved_file::resolve(dir / "work/moved/g.txt", false);
  REQUIRE(named);
  fs::create_symlink(dir / "out/victim.txt", dir / "work/moved/g.txt");
  CHECK(named->write("evil").find("replaced by a symbolic link") != std::string::npos);
  std::string content;
  CHECK(named->read(content).find("replaced by a symbolic link") != std::string::npos);
  CHECK(read_file(dir / "out/victim.txt") == "original");
}

TEST_CASE("a resolved file follows links, keeps the mode and leaves no temporary file") {
  temp_dir dir;
  fs::create_directories(dir / "real");
  write_file(dir / "real/f.sh", "old");
  ::chmod((dir / "real/f.sh").c_str(), 0750);
  fs::create_directory_symlink(dir / "real", dir / "link");
  fs::create_symlink("f.sh", dir / "real/alias");
  auto file = resolved_file::resolve(dir / "link/alias", false);
  REQUIRE(file);
  CHECK(file->real_path() == *real_location(dir / "real/f.sh"));
  std::string content;
  CHECK(file->read(content) == "");
  CHECK(content == "old");
  CHECK(file->write("new") == "");
  CHECK(read_file(dir / "real/f.sh") == "new");
  CHECK(fs::is_symlink(dir / "real/alias"));
  struct stat st {};
  REQUIRE(::stat((dir / "real/f.sh").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0750);
  size_t entries = 0;
  for ([[maybe_unused]] auto& e : fs::directory_iterator(dir / "real"))
    ++entries;
  CHECK(entries == 2);
  auto created = resolved_file::resolve(dir / "link/new/deeper/x.txt", true);
  REQUIRE(created);
  CHECK_FALSE(created->exists());
  CHECK(created->write("x") == "");
  CHECK(read_file(dir / "real/new/deeper/x.txt") == "x");
  CHECK_FALSE(resolved_file::resolve(dir / "missing/x.txt", false));
  auto directory = resolved_file::resolve(dir / "real", false);
  REQUIRE(directory);
  CHECK(directory->write("x").find("is a directory") != std::string::npos);
}

TEST_CASE("a file with other names, or someone else's, is written where it is") {
  // Renaming a new file over it would split it from its hard links and make it troupe's user's.
  temp_dir dir;
  write_file(dir / "f.txt", "old");
  fs::create_hard_link(dir / "f.txt", dir / "other_name.txt");
  auto linked = resolved_file::resolve(dir / "f.txt", false);
  REQUIRE(linked);
  CHECK(linked->write("new") == "");
  CHECK(read_file(dir / "other_name.txt") == "new");
  CHECK(fs::hard_link_count(dir / "f.txt") == 2);
  if (::geteuid() == 0) {
    write_file(dir / "theirs.txt", "old");
    REQUIRE(::chown((dir / "theirs.txt").c_str(), 65534, 65534) == 0);
    auto theirs = resolved_file::resolve(dir / "theirs.txt", false);
    REQUIRE(theirs);
    CHECK(theirs->write("new") == "");
    struct stat st {};
    REQUIRE(::stat((dir / "theirs.txt").c_str(), &st) == 0);
    CHECK(st.st_uid == 65534);
    CHECK(read_file(dir / "theirs.txt") == "new");
  }
}
