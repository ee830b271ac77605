#pragma once
// The run lock: `<session>/session.lock`, an exclusive open-file-description lock held by the one
// process that runs a session; and the liveness probe that asks for it without taking it.

#include <filesystem>
#include <memory>

#include "protocol/expected.hpp"
#include "store/session_paths.hpp"

namespace troupe {

/// An exclusive lock on a session's session.lock, held for as long as the object lives: one
/// process runs a session at a time.
class session_lock {
public:
  /// Takes the lock of `session` (its directory created 0700 if needed, an older one tightened);
  /// fails, saying so, when another process holds it.
  static expected<std::shared_ptr<session_lock>> take(const session_paths& session);
  /// Takes the lock of a fleet: held, it stands for the lock of every task session in it.
  static expected<std::shared_ptr<session_lock>> take(const fleet_paths& fleet);
  session_lock(const session_lock&) = delete;
  session_lock& operator=(const session_lock&) = delete;
  ~session_lock();

private:
  explicit session_lock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

/// True when a process holds the lock of `session` (it is running). A fleet task's session has
/// no lock of its own: it runs while its fleet's lock is held and its session.json says it runs.
/// Asks, never takes: a probe never gets in the way of a run that is starting.
bool session_running(const session_paths& session);

/// True when a process holds the lock file at `path`.
bool lock_held(const std::filesystem::path& path);

} // namespace troupe
