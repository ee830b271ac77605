#pragma once
// What tool processes leave behind. Tools may start processes that leave their process group
// and session (`setsid`, `nohup … &`, a double fork); those outlive the command that started
// them. troupe makes itself a child subreaper, so such orphans are re-parented to it instead of
// to init: they stay in its process tree, they are found by their TROUPE_PROCESS_OWNER tag
// (tools/child_process) and killed when their task or session ends, and whatever is left is
// killed when troupe exits. Orphans that exit are reaped here, never a child whose starter
// waits for it.

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace troupe {

/// Kills (SIGKILL) every process owned by `owner` — tagged `owner` or `owner/…` — with all its
/// descendants, again until no new one turns up (bounded). As a subreaper only this process's
/// descendants are looked at; otherwise every process readable by this user. An empty `owner`
/// kills nothing. Returns how many processes it signalled. Reads /proc; never waits.
size_t stop_owned_processes(const std::string& owner);

/// Kills every descendant of this process (its own children that a starter still waits for
/// included). For the process's end.
size_t stop_all_descendants();

/// Reaps this process's exited children that no starter waits for. Cheap when there are none.
void reap_orphans();

/// The process's reaper, for as long as it lives: makes the process a child subreaper (a
/// kernel without it only logs a warning: orphans then go to init, and only those still
/// tagged and readable are found), reaps orphans every `period` on a thread of its own, and on
/// destruction kills every descendant left.
class process_reaper {
public:
  explicit process_reaper(std::chrono::milliseconds period = std::chrono::milliseconds{500});
  ~process_reaper();
  process_reaper(const process_reaper&) = delete;
  process_reaper& operator=(const process_reaper&) = delete;

  /// True when the kernel made this process a subreaper.
  bool subreaper() const { return subreaper_; }
  /// Why it is not one: the errno prctl left.
  int subreaper_error() const { return error_; }

private:
  bool subreaper_ = false;
  int error_ = 0;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

} // namespace troupe
