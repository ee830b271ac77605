#pragma once
// A bash command line taken apart into the simple commands it runs, for the permission rules:
// quoting, substitutions (parsed too), compound commands, pipelines, redirections, here-docs.
// It understands a subset of bash and says "unknown" for everything else, since a construct it
// misread could hide a command from a deny rule.

#include <string>
#include <string_view>
#include <vector>

namespace troupe {

/// One word after quote removal; expansions (`$F`, `$(…)`, `` `…` ``) are kept as written.
struct shell_word {
  std::string text;
  /// Holds a parameter, command or arithmetic expansion: its value is not known here.
  bool expands = false;
  /// Holds unquoted glob or brace-expansion characters: bash may make it other words.
  bool globs = false;
};

struct shell_redirect {
  /// The operator without its descriptor: `>`, `>>`, `>|`, `&>`, `&>>`, `<>`, `>&`, `<`, `<&`,
  /// `<<`, `<<-`, `<<<`.
  std::string op;
  /// The file, the descriptor (`>&2`), the here-string or the here-doc's delimiter.
  shell_word target;

  /// True when the redirection opens a file for writing (`>&2` duplicates, it opens none).
  bool writes_file() const;
};

/// One simple command: its assignments, words and redirections. A compound command's own
/// redirections (`{ …; } > f`, `done > f`) come as a command without words.
struct shell_command {
  std::vector<shell_word> assignments; ///< `NAME=VALUE` before the command name, as written
  std::vector<shell_word> words;       ///< the command name, then its arguments
  std::vector<shell_redirect> redirects;
};

struct shell_syntax {
  /// Every simple command of the line, those inside substitutions, subshells and compound
  /// commands included, in the order they appear.
  std::vector<shell_command> commands;
  /// Empty when the whole line was understood; otherwise what was not (and `commands` is
  /// not to be trusted).
  std::string unknown;
};

/// Takes a command line apart; `depth` substitutions may nest (deeper is unknown).
shell_syntax parse_shell(std::string_view line, int depth = 8);

} // namespace troupe
