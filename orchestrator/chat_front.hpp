#pragma once
// The chat's terminal front end: the main thread's loop that owns the terminal, and the queue
// through which the session's events, questions and signals reach it.

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

#include "orchestrator/output_format.hpp"
#include "protocol/interfaces.hpp"

namespace troupe {

// What the actors hand to the chat's main thread, which alone writes to the terminal.
struct chat_item {
  enum class kind { text, status, ended, ask, signal } what = kind::text;
  std::string text;
  session_status_event status;
  session_ended_event ended;
  /// For an ask: its number with the asker.
  uint64_t ask_id = 0;
  int signal = 0;
};

// A queue from any thread to the main thread, with an eventfd to wake its poll().
class chat_mailbox {
public:
  chat_mailbox() : wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
  chat_mailbox(const chat_mailbox&) = delete;
  chat_mailbox& operator=(const chat_mailbox&) = delete;
  ~chat_mailbox() { ::close(wake_); }

  void push(chat_item item) {
    {
      std::lock_guard<std::mutex> guard{mutex_};
      items_.push_back(std::move(item));
    }
    uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_, &one, sizeof one);
  }

  std::deque<chat_item> take() {
    uint64_t count = 0;
    [[maybe_unused]] auto n = ::read(wake_, &count, sizeof count);
    std::lock_guard<std::mutex> guard{mutex_};
    return std::exchange(items_, {});
  }

  int fd() const { return wake_; }

  /// The chat is over: questions still coming are answered "no".
  void close() { closed_.store(true); }
  bool closed() const { return closed_.load(); }

private:
  int wake_;
  std::mutex mutex_;
  std::deque<chat_item> items_;
  std::atomic<bool> closed_{false};
};

/// What the front end works with.
struct chat_front_config {
  session_actor session;
  /// Where answers to permission questions go.
  deferred_asker_actor asker;
  std::shared_ptr<chat_mailbox> box;
  /// stdin and stdout are a terminal (else: one message per line read).
  bool terminal = false;
  text_style style;
  std::filesystem::path history;
  /// Ends the chat after this long without a key or output (0: never).
  std::chrono::milliseconds idle_timeout{0};
  /// Sent as if typed once the session first waits for input.
  std::string first_prompt;
  /// While the agent works and nothing is being printed, a line under the output says so (a
  /// spinner, the time, how to interrupt). Only for a terminal that can redraw a line: stdout
  /// a terminal, TERM not dumb.
  bool show_working = false;
};

/// Runs the front end until the session ends; returns the exit code of its terminal state.
int run_chat_front(chat_front_config config);

} // namespace troupe
