#pragma once
// What a shell command line runs, as the permission rules see it: each simple command with
// its quotes removed and its program named by its base name, transparent wrappers (env, sudo,
// xargs, timeout, …) taken off, `bash -c '…'` and `eval '…'` looked into, and the commands
// whose effect troupe cannot see (a script, code given to an interpreter, a command name from
// a variable) marked opaque.

#include <string>
#include <string_view>
#include <vector>

namespace troupe {

/// One command the line runs.
struct shell_run {
  /// `program arg1 arg2…`: the words after quote removal joined by one space, expansions as
  /// written. For an opaque command, the line or command as written.
  std::string text;
  /// What a deny rule is matched against: the command and each wrapper around it
  /// (`sudo rm f`, then `rm f`).
  std::vector<std::string> layers;
  /// What must all be allowed for the command to be: the command, and a privilege wrapper
  /// (`sudo rm f`) around it. Empty for `bash -c '…'` and `eval '…'`, whose commands come
  /// separately.
  std::vector<std::string> must_allow;
  /// The command's words, its program by base name (empty for an opaque command).
  std::vector<std::string> words;
  /// Takes more arguments from its input (`xargs rm`): a deny rule holds when the text could
  /// still grow into what it matches.
  bool open_ended = false;
  /// Why troupe cannot see what this command runs; empty when it can.
  std::string opaque;
};

/// A file a redirection writes.
struct shell_write {
  std::string path; ///< after quote removal
  /// Holds an expansion or a glob: where it writes is not known.
  bool opaque = false;
};

struct shell_line {
  std::vector<shell_run> commands;
  std::vector<shell_write> writes;
};

/// Takes a command line apart into what it runs and the files its redirections write. A line
/// the parser does not understand is one opaque command.
shell_line analyse_command_line(std::string_view line);

/// True for the programs whose first argument names what they do (`git status`, `npm test`),
/// so a rule for one of them is worth narrowing to that subcommand.
bool has_subcommands(std::string_view program);

} // namespace troupe
