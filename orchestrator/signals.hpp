#pragma once
// SIGINT/SIGTERM as messages: signals are blocked in every thread and one thread waits for them.

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <thread>

namespace troupe {

/// Blocks SIGINT, SIGTERM, SIGHUP, SIGWINCH (and SIGUSR1, the forwarder's own wake-up) for this thread and the
/// threads it starts later. Call before the actor system exists so CAF's threads inherit it.
void block_termination_signals();

/// True when SIGINT, SIGTERM or SIGHUP is pending (blocked and not taken yet): for a wait that
/// comes before the forwarder exists.
bool termination_pending();

/// Waits for SIGINT/SIGTERM/SIGHUP/SIGWINCH on its own thread and hands each to a callback.
class signal_forwarder {
public:
  explicit signal_forwarder(std::function<void(int)> on_signal);
  signal_forwarder(const signal_forwarder&) = delete;
  signal_forwarder& operator=(const signal_forwarder&) = delete;
  ~signal_forwarder();

private:
  std::atomic<bool> running_{true};
  std::thread thread_;
};

/// Ends the process with `code` if it still runs `grace` from now. The actor system waits at
/// exit for every thread of its own, and one step of a tool's scan (a regular expression on one
/// line, a read) cannot be cut: once the run's answer is out, its exit may not wait for that.
/// What the tools left running is stopped first, as at a normal exit, and the sandboxes'
/// private /tmp directories removed, then `before_exit` runs (if set).
void exit_if_still_running_after(std::chrono::milliseconds grace, int code, std::FILE* out,
                                 std::function<void()> before_exit = {});

} // namespace troupe
