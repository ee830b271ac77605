#include "orchestrator/line_editor.hpp"

#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <dlfcn.h>

#include <clocale>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include <editline/readline.h>

namespace troupe {

namespace {

// libedit (and the libtinfo, libbsd and libmd it brings) is opened here, by the chat only:
// linked, every `troupe run` paid for loading it (four more libraries to map and bind).
struct editline_functions {
  decltype(&::using_history) using_history;
  decltype(&::stifle_history) stifle_history;
  decltype(&::read_history) read_history;
  decltype(&::write_history) write_history;
  decltype(&::add_history) add_history;
  decltype(&::rl_callback_handler_install) callback_handler_install;
  decltype(&::rl_callback_handler_remove) callback_handler_remove;
  decltype(&::rl_callback_read_char) callback_read_char;
  decltype(&::rl_insert_text) insert_text;
  decltype(&::rl_forced_update_display) forced_update_display;
  decltype(&::rl_resize_terminal) resize_terminal;
  decltype(&::rl_catch_signals) catch_signals;
  decltype(&::rl_catch_sigwinch) catch_sigwinch;
  decltype(&::rl_line_buffer) line_buffer;
};

const editline_functions* lib = nullptr;

// $TROUPE_LIBEDIT names another build of the library (a file name or path for dlopen); else
// Debian's name, then other distributions' (Fedora and Arch ship libedit.so.0).
expected<const editline_functions*> open_editline() {
  const char* configured = std::getenv("TROUPE_LIBEDIT");
  std::vector<std::string> names = {"libedit.so.2", "libedit.so.0", "libedit.so"};
  if (configured != nullptr && *configured != '\0')
    names = {configured};
  void* handle = nullptr;
  std::string name, problem;
  for (auto& candidate : names) {
    handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      name = candidate;
      break;
    }
    if (problem.empty())
      problem = ::dlerror();
  }
  if (handle == nullptr)
    return failure{"cannot load libedit (" + problem + ")"};
  static editline_functions found;
  bool complete = true;
  auto take = [&](auto& into, const char* symbol) {
    into = reinterpret_cast<std::remove_reference_t<decltype(into)>>(::dlsym(handle, symbol));
    complete = complete && into != nullptr;
  };
  take(found.using_history, "using_history");
  take(found.stifle_history, "stifle_history");
  take(found.read_history, "read_history");
  take(found.write_history, "write_history");
  take(found.add_history, "add_history");
  take(found.callback_handler_install, "rl_callback_handler_install");
  take(found.callback_handler_remove, "rl_callback_handler_remove");
  take(found.callback_read_char, "rl_callback_read_char");
  take(found.insert_text, "rl_insert_text");
  take(found.forced_update_display, "rl_forced_update_display");
  take(found.resize_terminal, "rl_resize_terminal");
  take(found.catch_signals, "rl_catch_signals");
  take(found.catch_sigwinch, "rl_catch_sigwinch");
  take(found.line_buffer, "rl_line_buffer");
  if (!complete)
    return failure{name + " lacks a function the chat needs"};
  return &found;
}

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

expected<bool> line_editor::load() {
  static std::once_flag once;
  static expected<const editline_functions*> loaded = failure{""};
  std::call_once(once, [] { loaded = open_editline(); });
  if (!loaded)
    return failure{loaded.error()};
  lib = *loaded;
  return true;
}

line_editor::line_editor(std::string history_file) : history_file_(std::move(history_file)) {
  use_utf8_locale();
  saved_terminal_ = ::tcgetattr(STDIN_FILENO, &original_terminal) == 0;
  *lib->catch_signals = 0; // SIGINT reaches troupe's signal thread, never libedit's handler
  *lib->catch_sigwinch = 0;
  lib->using_history();
  lib->stifle_history(1000);
  if (!history_file_.empty())
    lib->read_history(history_file_.c_str());
}

line_editor::~line_editor() {
  if (active_ || hidden_)
    lib->callback_handler_remove();
  if (saved_terminal_)
    ::tcsetattr(STDIN_FILENO, TCSANOW, &original_terminal);
  current_handler = nullptr;
}

void line_editor::prompt(const std::string& prompt,
                         std::function<void(std::optional<std::string>)> on_line_done) {
  if (active_ || hidden_)
    lib->callback_handler_remove();
  prompt_ = prompt;
  on_line_ = [this, done = std::move(on_line_done)](std::optional<std::string> line) {
    active_ = false;
    hidden_ = false;
    lib->callback_handler_remove();
    done(std::move(line));
  };
  current_handler = &on_line_;
  install();
}

void line_editor::install() {
  active_ = true;
  hidden_ = false;
  lib->callback_handler_install(prompt_.c_str(), on_line);
  installed_text_ = kept_;
  key_read_ = false;
  if (!kept_.empty()) {
    lib->insert_text(kept_.c_str());
    kept_.clear();
    // The install drew the prompt; the refresh draws it again with the text, from column 0.
    std::fputs("\r\033[K", stdout);
    std::fflush(stdout);
    lib->forced_update_display();
  }
}

void line_editor::hide() {
  if (!active_)
    return;
  kept_ = current_line();
  lib->callback_handler_remove();
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
    lib->callback_handler_remove();
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
  lib->callback_read_char();
}

std::string line_editor::current_line() const {
  if (!active_)
    return {};
  if (!key_read_)
    return installed_text_;
  return *lib->line_buffer != nullptr ? std::string{*lib->line_buffer} : std::string{};
}

void line_editor::clear_line() {
  if (!active_)
    return;
  lib->callback_handler_remove();
  std::fputs("\n", stdout);
  std::fflush(stdout);
  kept_.clear();
  install();
}

void line_editor::remember(const std::string& line) {
  lib->add_history(line.c_str());
  if (!history_file_.empty())
    lib->write_history(history_file_.c_str());
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
  lib->resize_terminal();
  if (active_)
    lib->forced_update_display();
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
