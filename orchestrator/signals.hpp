#pragma once
// SIGINT/SIGTERM as messages: signals are blocked in every thread and one thread waits for them.

#include <atomic>
#include <functional>
#include <thread>

namespace troupe {

/// Blocks SIGINT, SIGTERM, SIGHUP, SIGWINCH (and SIGUSR1, the forwarder's own wake-up) for this thread and the
/// threads it starts later. Call before the actor system exists so CAF's threads inherit it.
void block_termination_signals();

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

} // namespace troupe
