#include "orchestrator/signals.hpp"

#include <pthread.h>
#include <signal.h>

#include <cstdlib>

#include "tools/process_reaper.hpp"
#include "tools/sandbox.hpp"

namespace troupe {

namespace {

// SIGUSR1 only wakes the forwarder when it is told to stop; it never reaches the callback.
sigset_t termination_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGWINCH);
  sigaddset(&set, SIGUSR1);
  return set;
}

} // namespace

void block_termination_signals() {
  auto set = termination_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

bool termination_pending() {
  sigset_t pending;
  sigemptyset(&pending);
  if (sigpending(&pending) != 0)
    return false;
  for (int sig : {SIGINT, SIGTERM, SIGHUP})
    if (sigismember(&pending, sig) == 1)
      return true;
  return false;
}

signal_forwarder::signal_forwarder(std::function<void(int)> on_signal)
  : thread_([this, on_signal = std::move(on_signal)] {
      auto set = termination_signals();
      while (running_.load()) {
        int sig = sigwaitinfo(&set, nullptr);
        if (sig > 0 && sig != SIGUSR1)
          on_signal(sig);
      }
    }) {}

signal_forwarder::~signal_forwarder() {
  running_.store(false);
  pthread_kill(thread_.native_handle(), SIGUSR1); // stops at once, no polling period to wait out
  thread_.join();
}

void exit_if_still_running_after(std::chrono::milliseconds grace, int code, std::FILE* out,
                                 std::function<void()> before_exit) {
  std::thread([grace, code, out, before_exit = std::move(before_exit)] {
    std::this_thread::sleep_for(grace);
    std::fflush(out);
    std::fprintf(stderr, "troupe: a tool was still running; exiting without waiting for it\n");
    stop_all_descendants();
    remove_sandbox_temps(); // no destructor runs past _Exit
    if (before_exit)
      before_exit();
    std::_Exit(code);
  }).detach();
}

} // namespace troupe
