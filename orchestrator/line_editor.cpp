#include "orchestrator/line_editor.hpp"

#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <clocale>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <editline/readline.h>

namespace troupe {

namespace {

// libedit's readline interface keeps one editor per process and calls a plain function with
// each line: it reaches the editor's handler through this pointer, set while a prompt is up.
std::function<void(std::optional<std::string>)>* current_handler = nullptr;

termios original_terminal;

void on_line(char* line) {
  std::optional<std::string> text;
  if (line != nullptr) {
    text = std::string{line};
    std::free(line);
  }
  // The handler may show the next prompt: take it out first.
  auto handler = current_handler != nullptr ? *current_handler
                                            : std::function<void(std::optional<std::string>)>{};
  if (handler)
    handler(std::move(text));
}

// libedit reads multibyte input only under a UTF-8 locale; a terminal session without LANG
// would get every non-ASCII key dropped.
void use_utf8_locale() {
  const char* locale = std::setlocale(LC_CTYPE, "");
  if (locale == nullptr || std::strcmp(locale, "C") == 0 || std::strcmp(locale, "POSIX") == 0)
    std::setlocale(LC_CTYPE, "C.UTF-8");
}

} // namespace

line_editor::line_editor(std::string history_file) : history_file_(std::move(history_file)) {
  use_utf8_locale();
  saved_terminal_ = ::tcgetattr(STDIN_FILENO, &original_terminal) == 0;
  rl_catch_signals = 0; // SIGINT reaches troupe's signal thread, never libedit's handler
  rl_catch_sigwinch = 0;
  using_history();
  stifle_history(1000);
  if (!history_file_.empty())
    read_history(history_file_.c_str());
}

line_editor::~line_editor() {
  if (active_ || hidden_)
    rl_callback_handler_remove();
  if (saved_terminal_)
    ::tcsetattr(STDIN_FILENO, TCSANOW, &original_terminal);
  current_handler = nullptr;
}

void line_editor::prompt(const std::string& prompt,
                         std::function<void(std::optional<std::string>)> on_line_done) {
  if (active_ || hidden_)
    rl_callback_handler_remove();
  prompt_ = prompt;
  on_line_ = [this, done = std::move(on_line_done)](std::optional<std::string> line) {
    active_ = false;
    hidden_ = false;
    rl_callback_handler_remove();
    done(std::move(line));
  };
  current_handler = &on_line_;
  install();
}

void line_editor::install() {
  active_ = true;
  hidden_ = false;
  rl_callback_handler_install(prompt_.c_str(), on_line);
  installed_text_ = kept_;
  key_read_ = false;
  if (!kept_.empty()) {
    rl_insert_text(kept_.c_str());
    kept_.clear();
    // The install drew the prompt; the refresh draws it again with the text, from column 0.
    std::fputs("\r\033[K", stdout);
    std::fflush(stdout);
    rl_forced_update_display();
  }
}

void line_editor::hide() {
  if (!active_)
    return;
  kept_ = current_line();
  rl_callback_handler_remove();
  std::fputs("\r\033[K", stdout);
  std::fflush(stdout);
  active_ = false;
  hidden_ = true;
}

void line_editor::show() {
  if (hidden_)
    install();
}

void line_editor::stop() {
  if (active_)
    kept_ = current_line();
  if (active_ || hidden_) {
    rl_callback_handler_remove();
    if (active_) {
      std::fputs("\r\033[K", stdout);
      std::fflush(stdout);
    }
  }
  active_ = false;
  hidden_ = false;
}

void line_editor::read_input() {
  if (!active_)
    return;
  key_read_ = true;
  rl_callback_read_char();
}

std::string line_editor::current_line() const {
  if (!active_)
    return {};
  if (!key_read_)
    return installed_text_;
  return rl_line_buffer != nullptr ? std::string{rl_line_buffer} : std::string{};
}

void line_editor::clear_line() {
  if (!active_)
    return;
  rl_callback_handler_remove();
  std::fputs("\n", stdout);
  std::fflush(stdout);
  kept_.clear();
  install();
}

void line_editor::remember(const std::string& line) {
  add_history(line.c_str());
  if (!history_file_.empty())
    write_history(history_file_.c_str());
}

std::string line_editor::take_typed_ahead() {
  std::string bytes;
  char buffer[4096];
  pollfd waiting{STDIN_FILENO, POLLIN, 0};
  while (::poll(&waiting, 1, 0) > 0 && (waiting.revents & POLLIN) != 0) {
    auto n = ::read(STDIN_FILENO, buffer, sizeof buffer);
    if (n <= 0)
      break;
    bytes.append(buffer, static_cast<size_t>(n));
  }
  return bytes;
}

bool line_editor::give_back(const std::string& keys) {
  for (size_t i = 0; i < keys.size(); ++i) {
    char c = keys[i];
    if (::ioctl(STDIN_FILENO, TIOCSTI, &c) != 0) {
      if (i == 0)
        return false; // refused outright: the caller replays them
      // Refused midway (the input queue is full): what is left is lost, like keys typed
      // into a full terminal.
      return true;
    }
  }
  return true;
}

void line_editor::resize() {
  rl_resize_terminal();
  if (active_)
    rl_forced_update_display();
}

void line_editor::quiet_terminal() {
  if (!saved_terminal_)
    return;
  termios quiet = original_terminal;
  quiet.c_lflag &= static_cast<tcflag_t>(~(ECHO | ICANON));
  quiet.c_cc[VMIN] = 1;
  quiet.c_cc[VTIME] = 0;
  ::tcsetattr(STDIN_FILENO, TCSANOW, &quiet);
}

} // namespace troupe
