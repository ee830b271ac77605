#include "orchestrator/signals.hpp"

#include <pthread.h>
#include <signal.h>
#include <time.h>

namespace troupe {

namespace {

sigset_t termination_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

} // namespace

void block_termination_signals() {
  auto set = termination_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

signal_forwarder::signal_forwarder(std::function<void(int)> on_signal)
  : thread_([this, on_signal = std::move(on_signal)] {
      auto set = termination_signals();
      timespec period{0, 100 * 1000 * 1000};
      while (running_.load()) {
        int sig = sigtimedwait(&set, nullptr, &period);
        if (sig > 0)
          on_signal(sig);
      }
    }) {}

signal_forwarder::~signal_forwarder() {
  running_.store(false);
  thread_.join();
}

} // namespace troupe
