#pragma once
// The chat's prompt: libedit's line editing and history in callback mode, so one thread can
// wait on the terminal and on the session's output at once. Only the chat's main thread uses
// it; libedit's state is process-wide, so there is at most one editor.

#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "protocol/expected.hpp"

namespace troupe {

class line_editor {
public:
  /// Opens libedit (once; the chat alone needs it): true, or why it cannot be used. Call it,
  /// successfully, before constructing an editor.
  static expected<bool> load();

  /// Takes over the terminal on stdin/stdout. History is read from and saved to
  /// `history_file` (empty: none).
  explicit line_editor(std::string history_file);
  line_editor(const line_editor&) = delete;
  line_editor& operator=(const line_editor&) = delete;
  /// Puts the terminal back as it was.
  ~line_editor();

  /// Shows `prompt` and starts reading a line. `on_line` gets the line, or nothing on end of
  /// input (Ctrl+D on an empty line). Text typed ahead while no prompt was shown is kept.
  void prompt(const std::string& prompt, std::function<void(std::optional<std::string>)> on_line);

  /// True while a prompt is shown.
  bool prompting() const { return active_; }

  /// Takes the prompt off the screen, keeping what was typed, for output to go above it.
  void hide();

  /// Shows the prompt hidden by hide() again, with what was typed.
  void show();

  /// Stops reading: the prompt goes away (what was typed is kept for the next prompt).
  void stop();

  /// Feeds the editor once stdin is readable.
  void read_input();

  /// What is typed on the current line.
  std::string current_line() const;

  /// Clears what is typed on the current line (Ctrl+C at the prompt).
  void clear_line();

  /// Adds a line to the history (and the history file).
  void remember(const std::string& line);

  /// While no prompt is shown, typed keys are neither echoed nor lost: they wait in the
  /// terminal for the next prompt. Ctrl+C still raises SIGINT.
  void quiet_terminal();

  /// Puts keys back into the terminal's input (TIOCSTI), for the next prompt to read with its
  /// line editing; false when the terminal refuses (they are then the caller's to replay).
  bool give_back(const std::string& keys);

  /// Takes the keys typed ahead that wait in the terminal (a question must not answer itself
  /// with them).
  std::string take_typed_ahead();

  /// Takes what was typed on a line that was stopped, or sets it: the next prompt starts with
  /// it.
  std::string take_kept() { return std::exchange(kept_, {}); }
  void keep(std::string text) { kept_ = std::move(text); }

  /// The terminal changed size (SIGWINCH).
  void resize();

private:
  /// Puts the prompt up with what was kept from the line.
  void install();

  std::string history_file_;
  bool active_ = false;
  bool hidden_ = false;
  std::string prompt_;
  std::string kept_;
  /// What the line holds while no key was read since the prompt went up: libedit's
  /// rl_line_buffer is only brought up to date by a key.
  std::string installed_text_;
  bool key_read_ = false;
  std::function<void(std::optional<std::string>)> on_line_;
  bool saved_terminal_ = false;
};

} // namespace troupe
