#include "orchestrator/chat_front.hpp"

#include <poll.h>
#include <sys/ioctl.h>

#include <cctype>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <optional>
#include <string_view>

#include <caf/send.hpp>

#include "actors/session.hpp"
#include "context/token_budget.hpp"
#include "orchestrator/line_editor.hpp"
#include "orchestrator/output_format.hpp"
#include "orchestrator/permission_prompt.hpp"

namespace troupe {

namespace {

std::string thousands(int64_t tokens) {
  char text[32];
  if (tokens >= 1000)
    std::snprintf(text, sizeof text, "%.1fk", static_cast<double>(tokens) / 1000.0);
  else
    std::snprintf(text, sizeof text, "%" PRId64, tokens);
  return text;
}

// The line above the prompt: model, turns, tokens, context, cost.
std::string status_line(const session_status_event& s) {
  std::string line = printable(s.model);
  if (!s.name.empty())
    line += " · " + printable(s.name);
  line += " · " + std::to_string(s.turn_count) + " turn" + (s.turn_count == 1 ? "" : "s");
  line += " · " +
          thousands(s.usage.input_tokens + s.usage.cache_read_tokens + s.usage.cache_write_tokens) +
          " in / " + thousands(s.usage.output_tokens) + " out";
  if (s.context_window > 0)
    line += " · context " + thousands(s.context_tokens) + "/" + thousands(s.context_window);
  if (s.cost_known)
    line += " · " + format_cost(s.cost_usd, true);
  return line;
}

// How long nothing must have been printed before the working line shows, and how often it is
// redrawn: text streaming in is never interleaved with it.
constexpr std::chrono::milliseconds working_quiet{300};
constexpr std::chrono::milliseconds working_frame{100};

// "1m 05s", "12s".
std::string elapsed_text(std::chrono::steady_clock::duration d) {
  auto seconds = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  if (seconds < 60)
    return std::to_string(seconds) + "s";
  char text[32];
  std::snprintf(text, sizeof text, "%lldm %02llds", static_cast<long long>(seconds / 60),
                static_cast<long long>(seconds % 60));
  return text;
}

// True when `text` holds nothing but colour codes (`ESC [ … m`), which move no cursor.
bool only_colour_codes(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] != '\033' || i + 1 >= text.size() || text[i + 1] != '[')
      return false;
    i += 2;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == ';'))
      ++i;
    if (i >= text.size() || text[i] != 'm')
      return false;
    ++i;
  }
  return true;
}

// The main thread's loop: it owns the terminal, shows the prompt when the session waits for
// input and hands every line typed to the session.
class chat_front {
public:
  chat_front(session_actor session, deferred_asker_actor asker, std::shared_ptr<chat_mailbox> box,
             bool terminal, text_style style, const std::filesystem::path& history,
             std::chrono::milliseconds idle_timeout, std::string first_prompt, bool show_working)
      : session_(std::move(session)), asker_(std::move(asker)), box_(std::move(box)),
        terminal_(terminal), style_(std::move(style)), idle_timeout_(idle_timeout),
        first_prompt_(std::move(first_prompt)), show_working_(show_working) {
    // The terminal stays as it is until the first prompt: libedit learns its special keys
    // (Ctrl+D as end of input among them) from a terminal it first finds in cooked mode.
    if (terminal_)
      editor_.emplace(history.string()); // line_editor::load succeeded (cli.cpp)
  }

  int run() {
    using clock = std::chrono::steady_clock;
    while (!ended_) {
      pollfd fds[2] = {{box_->fd(), POLLIN, 0}, {STDIN_FILENO, POLLIN, 0}};
      bool read_stdin = terminal_ ? (editor_->prompting()) : (!input_closed_ && waiting_);
      int timeout = -1;
      bool idle_clock = waiting_ && idle_timeout_.count() > 0 && last_status_.background == 0;
      if (pending_ask_)
        timeout = wait_ms(ask_due_);
      else if (idle_clock)
        timeout = wait_ms(last_activity_ + idle_timeout_);
      if (show_working_ && working_since_ && (timeout < 0 || timeout > working_frame.count()))
        timeout = static_cast<int>(working_frame.count());
      int n = ::poll(fds, read_stdin ? 2 : 1, timeout);
      if (n < 0 && errno != EINTR)
        break;
      if (fds[0].revents != 0) {
        for (auto& item : box_->take())
          handle(std::move(item));
        last_activity_ = clock::now();
      }
      if (read_stdin && !ended_ && (fds[1].revents & (POLLIN | POLLHUP)) != 0) {
        terminal_ ? editor_->read_input() : read_piped();
        last_activity_ = clock::now();
      }
      if (pending_ask_ && clock::now() >= ask_due_) {
        auto item = std::move(*pending_ask_);
        pending_ask_.reset();
        ask(item.text, item.ask_id);
      }
      if (idle_clock && waiting_ && clock::now() >= last_activity_ + idle_timeout_) {
        if (editor_)
          editor_->stop();
        write("\n" + style_.dim + "(idle for " + std::to_string(idle_timeout_.count() / 1000) +
              " s: the chat ends)" + style_.reset + "\n");
        submit("/exit");
      }
      update_working();
    }
    clear_working();
    box_->close();
    if (pending_ask_)
      reply(pending_ask_->ask_id, permission_answer::no);
    for (auto& item : box_->take())
      if (item.what == chat_item::kind::ask)
        reply(item.ask_id, permission_answer::no);
    if (pending_answer_)
      reply(*pending_answer_, permission_answer::no);
    return exit_code_;
  }

private:
  static int wait_ms(std::chrono::steady_clock::time_point until) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    return static_cast<int>(std::max<int64_t>(0, left.count()));
  }

  void write(const std::string& text) {
    if (text.empty())
      return;
    clear_working();
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    // Where the cursor is: colour codes after the last line break take no room.
    auto end = text.rfind('\n');
    if (!only_colour_codes(std::string_view{text}.substr(end == std::string::npos ? 0 : end + 1)))
      at_line_start_ = false;
    else if (end != std::string::npos)
      at_line_start_ = true;
    last_output_ = std::chrono::steady_clock::now();
  }

  // The working line: shown under the output while the agent works, nothing is being printed
  // and no prompt or question is up; redrawn in place, and taken away before anything else is
  // written. Never drawn after text that has not finished its line (it would split it).
  void update_working() {
    auto now = std::chrono::steady_clock::now();
    bool wanted = show_working_ && working_since_ && !waiting_ && !ended_ && !pending_answer_ &&
                  !pending_ask_ && !(editor_ && editor_->prompting()) && at_line_start_ &&
                  now - last_output_ >= working_quiet;
    if (!wanted) {
      clear_working();
      return;
    }
    if (working_shown_ && now < next_frame_)
      return;
    static const char* const frames[] = {"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"};
    std::string line = std::string{frames[frame_++ % 10]} + " working " +
                       elapsed_text(now - *working_since_) + " · Ctrl+C to interrupt";
    // One line, whatever the terminal's width: a wrapped line could not be taken back.
    winsize size{};
    if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 1) {
      size_t columns = 0, end = 0;
      for (; end < line.size(); ++end)
        if ((static_cast<unsigned char>(line[end]) & 0xC0) != 0x80 && ++columns == size.ws_col)
          break;
      line.resize(end);
    }
    auto drawn = "\r\033[K" + style_.dim + line + style_.reset;
    std::fwrite(drawn.data(), 1, drawn.size(), stdout);
    std::fflush(stdout);
    working_shown_ = true;
    next_frame_ = now + working_frame;
  }

  void clear_working() {
    if (!working_shown_)
      return;
    working_shown_ = false;
    std::fputs("\r\033[K", stdout);
    std::fflush(stdout);
  }

  // Output goes above the prompt: the prompt leaves the screen and comes back under it.
  void print(const std::string& text) {
    bool shown = editor_ && editor_->prompting();
    if (shown)
      editor_->hide();
    write(text);
    if (shown) {
      if (!text.empty() && text.back() != '\n')
        write("\n");
      editor_->show();
    }
  }

  void handle(chat_item item) {
    switch (item.what) {
    case chat_item::kind::text:
      print(item.text);
      if (pending_ask_) // the question goes under what the agent says before it
        ask_due_ = std::chrono::steady_clock::now() + std::chrono::milliseconds{30};
      break;
    case chat_item::kind::status:
      on_status(item.status);
      break;
    case chat_item::kind::ended:
      clear_working();
      working_since_.reset();
      if (editor_)
        editor_->stop();
      exit_code_ = exit_code_for(item.ended.reason);
      ended_ = true;
      break;
    case chat_item::kind::ask:
      // Asked from the step, apart from the text that led to it: give that text a moment to
      // arrive, so the question reads after the reply that made the call.
      if (pending_ask_)
        reply(pending_ask_->ask_id, permission_answer::no);
      pending_ask_ = std::move(item);
      ask_due_ = std::chrono::steady_clock::now() + std::chrono::milliseconds{30};
      break;
    case chat_item::kind::signal:
      on_signal(item.signal);
      break;
    }
  }

  void on_status(const session_status_event& s) {
    // A question still up when the session waits for input again (its step was interrupted,
    // from here or from another process) is stale: withdrawn, answered "no" for the step that
    // no longer waits. (A busy status proves nothing: it may come after the question it
    // precedes, the two travel different ways.)
    if ((pending_answer_ || pending_ask_) && !s.busy)
      withdraw_question();
    last_status_ = s;
    if (s.busy) {
      if (!working_since_)
        working_since_ = std::chrono::steady_clock::now();
      waiting_ = false;
      if (editor_ && editor_->prompting() && !pending_answer_) {
        editor_->stop(); // a notification started a turn: what was typed waits
        editor_->quiet_terminal();
      }
      return;
    }
    if (waiting_)
      return; // a name or model change while the prompt is up
    clear_working(); // before the prompt, which libedit draws where the cursor is
    working_since_.reset();
    waiting_ = true;
    empty_interrupts_ = 0;
    if (exit_when_idle_) {
      submit("/exit");
      return;
    }
    // The prompt from the command line, sent as if typed once the session waits for input
    // (after a crash-recovery answer, under the header).
    if (!first_prompt_.empty()) {
      auto text = std::exchange(first_prompt_, {});
      write(style_.bold + "› " + text + style_.reset + "\n");
      if (editor_)
        editor_->remember(text);
      submit(text);
      return;
    }
    if (s.turn_count != shown_turns_ || !status_shown_) {
      write(style_.dim + status_line(s) + style_.reset + "\n");
      shown_turns_ = s.turn_count;
      status_shown_ = true;
    }
    if (terminal_)
      show_prompt();
    else
      send_piped();
  }

  void show_prompt() {
    if (replay_typed_ahead())
      return;
    auto mark = continued_.empty() ? std::string{"› "} : std::string{"… "};
    // \001 and \002 tell libedit the colour codes take no room on the screen.
    auto prompt = style_.bold.empty()
                      ? mark
                      : "\001" + style_.bold + "\002" + mark.substr(0, mark.size() - 1) + "\001" +
                            style_.reset + "\002 ";
    editor_->prompt(prompt, [this](std::optional<std::string> line) { on_line(std::move(line)); });
  }

  // Keys typed ahead while a question was asked: a whole line is sent as typed at this
  // prompt; a part line starts the prompt. Returns true when a line was sent.
  bool replay_typed_ahead() {
    if (typed_ahead_.empty())
      return false;
    std::string text;
    for (size_t i = 0; i < typed_ahead_.size(); ++i) {
      auto c = static_cast<unsigned char>(typed_ahead_[i]);
      if (c == '\r' || c == '\n') {
        typed_ahead_.erase(0, i + 1);
        text = editor_->take_kept() + text;
        if (text.find_first_not_of(" \t") == std::string::npos)
          return replay_typed_ahead();
        write(style_.bold + "› " + text + style_.reset + "\n");
        editor_->remember(text);
        submit(text);
        return true;
      }
      if (c == 0x1b) { // an escape sequence (an arrow key): dropped
        if (i + 1 < typed_ahead_.size() && typed_ahead_[i + 1] == '[')
          for (i += 2;
               i < typed_ahead_.size() && (typed_ahead_[i] < 0x40 || typed_ahead_[i] > 0x7e); ++i) {
          }
        continue;
      }
      if (c == 0x7f || c == 0x08) { // backspace: the last character (all its UTF-8 bytes)
        while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80)
          text.pop_back();
        if (!text.empty())
          text.pop_back();
        continue;
      }
      if (c == 0x15) { // Ctrl+U: the whole line
        text.clear();
        continue;
      }
      if (c == 0x17) { // Ctrl+W: the last word
        while (!text.empty() && text.back() == ' ')
          text.pop_back();
        while (!text.empty() && text.back() != ' ')
          text.pop_back();
        continue;
      }
      if (c >= 0x20)
        text += static_cast<char>(c);
    }
    typed_ahead_.clear();
    editor_->keep(editor_->take_kept() + text);
    return false;
  }

  void submit(const std::string& text) {
    waiting_ = false;
    working_since_ = std::chrono::steady_clock::now();
    caf::anon_send(session_, submit_atom::value, make_input(text));
  }

  void on_line(std::optional<std::string> line) {
    if (!line) {
      write("\n");
      submit("/exit"); // Ctrl+D
      return;
    }
    // A line ending in a backslash goes on on the next one.
    if (!line->empty() && line->back() == '\\') {
      continued_ += line->substr(0, line->size() - 1) + "\n";
      show_prompt();
      return;
    }
    auto text = continued_ + *line;
    continued_.clear();
    if (text.find_first_not_of(" \t\n") == std::string::npos) {
      show_prompt();
      return;
    }
    editor_->remember(text);
    editor_->quiet_terminal();
    submit(text);
  }

  void reply(uint64_t id, permission_answer answer) {
    caf::anon_send(asker_, ask_atom::value, id, answer);
  }

  void withdraw_question() {
    if (pending_ask_) {
      reply(pending_ask_->ask_id, permission_answer::no);
      pending_ask_.reset();
    }
    if (!pending_answer_)
      return;
    if (editor_ && editor_->prompting())
      editor_->stop();
    editor_->take_kept(); // the half-typed answer goes with the question
    write("\n" + style_.dim + "(the question was withdrawn: its step was interrupted)" +
          style_.reset + "\n");
    answer(permission_answer::no);
  }

  void ask(const std::string& question, uint64_t id) {
    if (!terminal_) {
      reply(id, permission_answer::no); // nobody to ask: a headless ask is a denial
      return;
    }
    if (pending_answer_)
      reply(*pending_answer_, permission_answer::no);
    pending_answer_ = id;
    if (editor_->prompting())
      editor_->stop();
    clear_working();
    // What was typed before the question is kept for later, never taken as its answer.
    line_before_question_ = editor_->take_kept();
    typed_ahead_ += editor_->take_typed_ahead();
    write("\n" + style_.yellow + "[troupe] " + question + style_.reset + "\n");
    ask_again();
  }

  void ask_again() {
    editor_->prompt("Allow? [y]es / [n]o / [a]lways for this session: ",
                    [this](std::optional<std::string> line) {
                      auto reply = line ? parse_permission_answer(*line)
                                        : std::optional{permission_answer::no};
                      if (!reply) {
                        ask_again();
                        return;
                      }
                      answer(*reply);
                    });
  }

  void answer(permission_answer given) {
    if (!pending_answer_)
      return;
    reply(*pending_answer_, given);
    pending_answer_.reset();
    editor_->keep(std::exchange(line_before_question_, {}));
    // Keys typed before the question go back to the terminal, edits and all, for the next
    // prompt to read; where the terminal refuses (TIOCSTI off), they are replayed by hand.
    if (editor_->give_back(typed_ahead_))
      typed_ahead_.clear();
    editor_->quiet_terminal();
  }

  void on_signal(int sig) {
    if (sig == SIGWINCH) {
      if (editor_)
        editor_->resize();
      return;
    }
    if (sig == SIGHUP) {
      // The terminal went away: nobody is left to answer, the session ends at once.
      caf::anon_send_exit(session_, caf::exit_reason::user_shutdown);
      return;
    }
    if (sig == SIGTERM) {
      // Asked to stop: like /exit, after the step in flight is interrupted.
      withdraw_question();
      if (waiting_) {
        if (editor_)
          editor_->stop();
        submit("/exit");
      } else {
        exit_when_idle_ = true;
        caf::anon_send<caf::message_priority::high>(session_, interrupt_atom::value);
      }
      return;
    }
    typed_ahead_.clear(); // Ctrl+C drops what was typed ahead, as the terminal does
    if (pending_answer_) {
      if (editor_->prompting())
        editor_->stop();
      write("\n");
      answer(permission_answer::no);
      caf::anon_send<caf::message_priority::high>(session_, interrupt_atom::value);
      return;
    }
    if (!waiting_) {
      // The agent works: the step in flight stops, every call issued is answered.
      write("\n" + style_.dim + "(interrupting)" + style_.reset + "\n");
      caf::anon_send<caf::message_priority::high>(session_, interrupt_atom::value);
      return;
    }
    // At the prompt: the session drops what it had queued, the line typed is cleared, and a
    // second Ctrl+C in a row on an empty prompt ends the chat.
    caf::anon_send<caf::message_priority::high>(session_, interrupt_atom::value);
    bool typed = (editor_ && !editor_->current_line().empty()) || !continued_.empty();
    continued_.clear();
    if (typed) {
      empty_interrupts_ = 0;
      if (editor_)
        editor_->clear_line();
      return;
    }
    if (++empty_interrupts_ >= 2) {
      if (editor_)
        editor_->stop();
      write("\n");
      submit("/exit");
      return;
    }
    print("\n" + style_.dim + "(press Ctrl+C again to exit, or Ctrl+D)" + style_.reset + "\n");
  }

  // stdin is not a terminal: each line is one message, sent when the session waits.
  void read_piped() {
    char buffer[4096];
    auto n = ::read(STDIN_FILENO, buffer, sizeof buffer);
    if (n <= 0) {
      input_closed_ = true;
    } else {
      piped_.append(buffer, static_cast<size_t>(n));
    }
    send_piped();
  }

  void send_piped() {
    if (!waiting_)
      return;
    auto end = piped_.find('\n');
    if (end == std::string::npos && !input_closed_)
      return;
    if (end == std::string::npos && piped_.empty()) {
      submit("/exit"); // end of input
      return;
    }
    auto line = piped_.substr(0, end);
    piped_.erase(0, end == std::string::npos ? std::string::npos : end + 1);
    if (!line.empty() && line.back() == '\r')
      line.pop_back(); // CRLF line ends
    if (line.find_first_not_of(" \t\r") == std::string::npos) {
      send_piped();
      return;
    }
    write(style_.bold + "› " + line + style_.reset + "\n");
    submit(line);
  }

  session_actor session_;
  deferred_asker_actor asker_;
  std::shared_ptr<chat_mailbox> box_;
  bool terminal_;
  text_style style_;
  std::optional<line_editor> editor_;
  session_status_event last_status_;
  /// The status line is shown before the first prompt and after each turn, not after commands.
  int64_t shown_turns_ = 0;
  bool status_shown_ = false;
  /// The session waits for input (its last status said so, and nothing was sent since).
  bool waiting_ = false;
  bool ended_ = false;
  int exit_code_ = 0;
  int empty_interrupts_ = 0;
  std::string continued_;
  /// The question at the prompt, by its number with the asker.
  std::optional<uint64_t> pending_answer_;
  std::string piped_;
  bool input_closed_ = false;
  /// Keys typed ahead while a question was asked: replayed at the next prompt.
  std::string typed_ahead_;
  /// The line a question interrupted, for the prompt after it.
  std::string line_before_question_;
  /// A question waits a moment for the text before it (the reply that made the call) to land.
  std::optional<chat_item> pending_ask_;
  std::chrono::steady_clock::time_point ask_due_;
  /// The chat's own idle timeout: reset by every key and every output.
  std::chrono::milliseconds idle_timeout_{0};
  std::chrono::steady_clock::time_point last_activity_ = std::chrono::steady_clock::now();
  /// SIGTERM while the agent worked: the chat ends at the next prompt.
  bool exit_when_idle_ = false;
  /// The first prompt from the command line, shown once the session's header is out.
  std::string first_prompt_;
  /// The working line may be shown (a terminal that redraws lines).
  bool show_working_ = false;
  /// Since when the agent works (input sent, or a turn it started itself); unset while it
  /// waits for input.
  std::optional<std::chrono::steady_clock::time_point> working_since_;
  bool working_shown_ = false;
  size_t frame_ = 0;
  std::chrono::steady_clock::time_point next_frame_;
  /// The last text written ended its line: the cursor is at the start of an empty one.
  bool at_line_start_ = true;
  std::chrono::steady_clock::time_point last_output_ = std::chrono::steady_clock::now();
};

} // namespace

int run_chat_front(chat_front_config config) {
  chat_front front{std::move(config.session), std::move(config.asker),       std::move(config.box),
                   config.terminal,           std::move(config.style),       config.history,
                   config.idle_timeout,       std::move(config.first_prompt), config.show_working};
  return front.run();
}

} // namespace troupe
