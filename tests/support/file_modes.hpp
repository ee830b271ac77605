#pragma once
// File modes in tests of what troupe keeps private.

#include <sys/stat.h>

#include <filesystem>

#include <doctest/doctest.h>

namespace troupe::test {

/// The permission bits of `path` (the link itself for a symlink); fails the test when it is gone.
inline unsigned mode_of(const std::filesystem::path& path) {
  struct stat st{};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

/// Sets the umask for the object's lifetime.
struct umask_guard {
  explicit umask_guard(mode_t mask) : saved(::umask(mask)) {}
  ~umask_guard() { ::umask(saved); }
  umask_guard(const umask_guard&) = delete;
  umask_guard& operator=(const umask_guard&) = delete;
  mode_t saved;
};

} // namespace troupe::test
