#include "tools/shell_commands.hpp"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <optional>

#include "tools/shell_syntax.hpp"

namespace troupe {

namespace {

using words = std::vector<shell_word>;

// `bash -c '…'` inside `eval '…'` inside …: deeper than this is opaque.
constexpr int max_nesting = 4;

bool one_of(std::string_view text, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), text) != names.end();
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// Variables that change what later commands run or how the shell reads them.
bool changes_what_runs(std::string_view name) {
  for (auto prefix : {"LD_", "BASH_FUNC_", "GIT_CONFIG"})
    if (starts_with(name, prefix))
      return true;
  return one_of(name, {"PATH", "BASH_ENV", "ENV", "IFS", "PROMPT_COMMAND", "SHELLOPTS",
                       "BASHOPTS", "PS4", "GLOBIGNORE", "BASH_LOADABLES_PATH", "CDPATH", "PAGER",
                       "GIT_PAGER", "MANPAGER", "EDITOR", "VISUAL", "GIT_EDITOR", "GIT_SSH",
                       "GIT_SSH_COMMAND", "GIT_EXTERNAL_DIFF", "GIT_ASKPASS", "SSH_ASKPASS",
                       "GIT_EXEC_PATH", "PERL5OPT", "PERL5LIB", "PYTHONSTARTUP", "PYTHONPATH",
                       "PYTHONHOME", "NODE_OPTIONS", "RUBYOPT", "RUBYLIB", "LESSOPEN",
                       "LESSCLOSE", "GCONV_PATH", "ZDOTDIR", "BASH_CMDS", "BASH_ALIASES"});
}

// The name an assignment word (`NAME=…`, `NAME+=…`) sets.
std::string_view assigned_name(std::string_view word) {
  auto end = word.find('=');
  auto name = word.substr(0, end);
  if (!name.empty() && name.back() == '+')
    name.remove_suffix(1);
  return name;
}

std::string base_name(const std::string& program) {
  auto slash = program.find_last_of('/');
  if (slash == std::string::npos || slash + 1 == program.size())
    return program;
  return program.substr(slash + 1);
}

// A wrapper's options, as its manual lists them.
struct option_table {
  std::string_view flags;  ///< short options without a value
  std::string_view valued; ///< short options taking one (attached or the next word)
  std::initializer_list<std::string_view> long_flags;
  std::initializer_list<std::string_view> long_valued; ///< `--x=V` or `--x V`
  std::string_view attached_only = {}; ///< short options whose value is only ever attached
  std::initializer_list<std::string_view> long_optional = {}; ///< `--x` or `--x=V`
  bool digit_option = false; ///< `-N` (nice's adjustment)
};

// Where the command after the wrapper's options starts, or nullopt for an option the table
// does not know (then nobody can tell where the command starts). `seen` gets the short and
// long options met, for the wrappers that behave differently with some.
std::optional<size_t> skip_options(const words& w, size_t i, const option_table& table,
                                   std::string* seen = nullptr) {
  while (i < w.size()) {
    const auto& arg = w[i].text;
    if (w[i].expands)
      return std::nullopt;
    if (arg == "--")
      return i + 1;
    if (starts_with(arg, "--")) {
      auto eq = arg.find('=');
      auto name = std::string_view{arg}.substr(2, eq == std::string::npos ? std::string::npos
                                                                          : eq - 2);
      if (seen)
        *seen += " --" + std::string{name};
      if (one_of(name, table.long_optional) || (eq == std::string::npos && one_of(name, table.long_flags))) {
        ++i;
      } else if (one_of(name, table.long_valued)) {
        i += eq == std::string::npos ? 2 : 1;
      } else {
        return std::nullopt;
      }
      continue;
    }
    if (arg.size() < 2 || arg[0] != '-')
      return i;
    if (table.digit_option &&
        std::all_of(arg.begin() + 1, arg.end(), [](unsigned char c) { return std::isdigit(c); })) {
      ++i;
      continue;
    }
    size_t next = i + 1;
    for (size_t c = 1; c < arg.size(); ++c) {
      char option = arg[c];
      if (seen)
        *seen += option;
      if (table.attached_only.find(option) != std::string_view::npos)
        break;
      if (table.valued.find(option) != std::string_view::npos) {
        if (c + 1 == arg.size())
          next = i + 2;
        break;
      }
      if (table.flags.find(option) == std::string_view::npos)
        return std::nullopt;
    }
    i = next;
  }
  return std::min(i, w.size());
}

// What a wrapper does with the words after it.
struct unwrapped {
  enum { runs, itself, opaque } kind = runs;
  size_t command = 0; ///< where the command it runs starts (`runs`)
  std::string why;    ///< `opaque`
};

unwrapped opaque_because(std::string why) {
  return {unwrapped::opaque, 0, std::move(why)};
}

constexpr std::string_view unknown_option = "an option troupe does not know";

// NAME=VALUE words a wrapper (env, sudo) sets before the command.
std::optional<unwrapped> skip_assignments(const words& w, size_t& i) {
  while (i < w.size() && w[i].text.find('=') != std::string::npos &&
         !starts_with(w[i].text, "=")) {
    auto name = assigned_name(w[i].text);
    if (!std::all_of(name.begin(), name.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; }))
      break;
    if (changes_what_runs(name))
      return opaque_because("it sets " + std::string{name} + ", which changes what runs");
    ++i;
  }
  return std::nullopt;
}

std::optional<unwrapped> unwrap(const std::string& name, const words& w, size_t k) {
  std::optional<size_t> next;
  std::string seen;
  if (name == "command") {
    next = skip_options(w, k + 1, {"pvV", "", {}, {}}, &seen);
    if (next && seen.find_first_of("vV") != std::string::npos)
      return unwrapped{unwrapped::itself, 0, {}}; // `command -v x` only looks x up
  } else if (name == "builtin" || name == "nohup") {
    next = skip_options(w, k + 1, {"", "", {}, {}});
  } else if (name == "env") {
    if (k + 1 < w.size() && w[k + 1].text == "-") // `env -` is `env -i`
      ++k;
    next = skip_options(w, k + 1,
                        {"i0v", "uCS", {"ignore-environment", "null", "debug"},
                         {"unset", "chdir", "split-string"}, {},
                         {"default-signal", "ignore-signal", "block-signal"}},
                        &seen);
    if (seen.find('S') != std::string::npos || seen.find("split-string") != std::string::npos)
      return opaque_because("env -S splits a string into a command troupe does not parse");
    if (next) {
      auto i = *next;
      if (auto stop = skip_assignments(w, i))
        return stop;
      next = i;
    }
  } else if (name == "nice") {
    next = skip_options(w, k + 1, {"", "n", {}, {"adjustment"}, {}, {}, true});
  } else if (name == "time") {
    next = skip_options(w, k + 1, {"p", "", {}, {}});
  } else if (name == "timeout") {
    next = skip_options(w, k + 1,
                        {"v", "sk", {"foreground", "preserve-status", "verbose"},
                         {"signal", "kill-after"}});
    if (next && *next < w.size())
      ++*next; // the duration
  } else if (name == "xargs") {
    next = skip_options(w, k + 1,
                        {"0rtpxo", "IndPLsaE",
                         {"null", "no-run-if-empty", "verbose", "interactive", "exit",
                          "open-tty", "show-limits"},
                         {"max-args", "max-procs", "delimiter", "max-chars", "arg-file",
                          "process-slot-var"},
                         "ile", {"replace", "eof", "max-lines"}});
  } else if (name == "sudo") {
    next = skip_options(w, k + 1,
                        {"AbEHKknPSVlv", "uUgCDhprtTR",
                         {"askpass", "background", "preserve-groups", "set-home", "remove-timestamp",
                          "reset-timestamp", "non-interactive", "stdin", "list", "validate",
                          "version"},
                         {"user", "group", "close-from", "chdir", "host", "prompt", "role", "type",
                          "command-timeout", "other-user", "chroot"},
                         {}, {"preserve-env"}},
                        &seen);
    if (next) {
      auto i = *next;
      if (auto stop = skip_assignments(w, i))
        return stop;
      next = i;
    }
  } else if (name == "doas") {
    next = skip_options(w, k + 1, {"n", "uC", {}, {}});
  } else if (name == "exec") {
    next = skip_options(w, k + 1, {"cl", "a", {}, {}});
  } else if (name == "stdbuf") {
    next = skip_options(w, k + 1, {"", "ioe", {}, {"input", "output", "error"}});
  } else if (name == "setsid") {
    next = skip_options(w, k + 1, {"cfw", "", {"ctty", "fork", "wait"}, {}});
  } else if (name == "ionice") {
    next = skip_options(w, k + 1, {"t", "cnpPu", {}, {}}, &seen);
    if (next && seen.find_first_of("pPu") != std::string::npos)
      return unwrapped{unwrapped::itself, 0, {}}; // it sets other processes' priority
  } else {
    return std::nullopt;
  }
  if (!next)
    return opaque_because(name + " with " + std::string{unknown_option});
  return unwrapped{unwrapped::runs, *next, {}};
}

bool is_shell(std::string_view name) {
  return one_of(name, {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "rbash", "yash",
                       "fish", "csh", "tcsh", "pdksh", "oksh"});
}

bool is_interpreter(std::string_view name) {
  for (auto prefix : {"python", "pypy", "perl", "ruby", "php", "lua", "tclsh", "node"})
    if (starts_with(name, prefix))
      return true;
  return one_of(name, {"nodejs", "deno", "bun", "luajit", "Rscript", "R", "osascript", "wish",
                       "irb", "jshell", "groovy", "julia", "guile", "racket", "sbcl", "elixir",
                       "erl", "swift", "kotlin", "scala", "pwsh"});
}

// Programs that run another command in a way not unwrapped here.
bool runs_other_commands(std::string_view name) {
  return one_of(name, {"watch", "flock", "chrt", "taskset", "strace", "ltrace", "unshare",
                       "chroot", "runuser", "su", "sg", "script", "parallel", "busybox", "toybox",
                       "systemd-run", "firejail", "nsenter", "prlimit", "setpriv", "fakeroot",
                       "proot", "bwrap", "dbus-launch", "xvfb-run", "unbuffer", "valgrind", "gdb",
                       "expect", "tmux", "screen", "trap", "alias", "fc", "bind", "enable",
                       "source", ".", "coproc", "sudoedit", "pkexec", "at", "batch", "crontab",
                       // a pager or an editor runs commands (`!cmd`, `vim -c '!cmd'`), a
                       // completion spec and dc's `!` run them, m4 has syscmd
                       "less", "more", "most", "man", "vi", "vim", "nvim", "view", "ex", "ed",
                       "red", "dc", "m4", "compgen", "complete",
                       // sqlite3's `.system` and `.shell` run a command
                       "sqlite3", "sqlite"});
}

// `--name` or `--name=V` where `name` is `full` or an abbreviation of it (getopt_long takes
// any unambiguous prefix; `min` characters at least are taken as meaning it).
bool long_option(std::string_view arg, std::string_view full, size_t min = 3) {
  if (!starts_with(arg, "--"))
    return false;
  auto name = arg.substr(2, arg.find('=') == std::string_view::npos ? std::string_view::npos
                                                                    : arg.find('=') - 2);
  return name.size() >= std::min(min, full.size()) && starts_with(full, name);
}

// A cluster of short options (`-ro`) holding one of `letters`.
bool short_cluster_has(std::string_view arg, std::string_view letters) {
  return arg.size() >= 2 && arg[0] == '-' && arg[1] != '-' &&
         arg.find_first_of(letters, 1) != std::string_view::npos;
}

// A variable name an argument sets: with a `[` it is an array subscript, evaluated as
// arithmetic (`a[$(cmd)]` runs cmd), and a name from an expansion could be anything.
std::string variable_problem(const std::string& name, const shell_word& word,
                             std::string_view set) {
  if (word.expands)
    return name + " sets a variable named by an expansion";
  if (set.find('[') != std::string_view::npos)
    return name + " sets " + std::string{set} +
           ": an array subscript is evaluated as arithmetic, which can run commands";
  if (changes_what_runs(set))
    return name + " sets " + std::string{set} + ", which changes what later commands run";
  return {};
}

// What in a GNU sed script runs a command or writes a file: the `e` command and `s///e`, the
// `w`/`W` commands and `s///w`. The script is read command by command; what the reader does
// not follow is taken as doing so.
bool sed_script_runs(std::string_view script) {
  size_t i = 0;
  auto skip = [&](std::string_view chars) {
    while (i < script.size() && chars.find(script[i]) != std::string_view::npos)
      ++i;
  };
  // Past a delimited part (`/re/`), escapes included; false when it is not closed.
  auto delimited = [&](char delim) {
    while (i < script.size() && script[i] != delim) {
      if (script[i] == '\\')
        ++i;
      else if (script[i] == '\n')
        return false;
      ++i;
    }
    if (i >= script.size())
      return false;
    ++i;
    return true;
  };
  auto address = [&]() {
    if (i < script.size() && script[i] == '/') {
      ++i;
      bool closed = delimited('/');
      skip("IM");
      return closed;
    }
    if (i + 1 < script.size() && script[i] == '\\') {
      char delim = script[i + 1];
      i += 2;
      bool closed = delimited(delim);
      skip("IM");
      return closed;
    }
    skip("0123456789$~+");
    return true;
  };
  auto to_line_end = [&]() {
    while (i < script.size() && script[i] != '\n')
      ++i;
  };
  while (i < script.size()) {
    skip(" \t\n;");
    if (i >= script.size())
      break;
    if (script[i] == '#') {
      to_line_end();
      continue;
    }
    if (!address())
      return true;
    skip(" \t");
    if (i < script.size() && script[i] == ',') {
      ++i;
      skip(" \t");
      if (!address())
        return true;
    }
    skip(" \t!");
    if (i >= script.size())
      return true;
    char command = script[i++];
    switch (command) {
      case '{':
      case '}':
      case '=': case 'd': case 'D': case 'g': case 'G': case 'h': case 'H': case 'n':
      case 'N': case 'p': case 'P': case 'x': case 'z': case 'F':
        break;
      case 'l': case 'L': case 'q': case 'Q':
        skip(" \t0123456789");
        break;
      case ':': case 'b': case 't': case 'T':
        while (i < script.size() && script[i] != ';' && script[i] != '\n')
          ++i;
        break;
      case 'a': case 'i': case 'c': case 'r': case 'R':
        to_line_end(); // text or a file it reads, to the end of the line
        break;
      case 's': {
        if (i >= script.size() || script[i] == '\n' || script[i] == '\\')
          return true;
        char delim = script[i++];
        if (!delimited(delim) || !delimited(delim))
          return true;
        while (i < script.size() && script[i] != ';' && script[i] != '\n' && script[i] != '}') {
          if (script[i] == 'e' || script[i] == 'w' || script[i] == 'W')
            return true;
          if (std::string_view{"gpiImM0123456789 \t"}.find(script[i]) == std::string_view::npos)
            return true;
          ++i;
        }
        break;
      }
      case 'y': {
        if (i >= script.size() || script[i] == '\n' || script[i] == '\\')
          return true;
        char delim = script[i++];
        if (!delimited(delim) || !delimited(delim))
          return true;
        break;
      }
      default: // e, w, W and anything this reader does not know
        return true;
    }
  }
  return false;
}

class analyser {
public:
  explicit analyser(shell_line& out) : out_(out) {}

  void line(std::string_view text, int depth) {
    auto syntax = parse_shell(text);
    if (!syntax.unknown.empty() || depth > max_nesting) {
      shell_run run;
      run.text = std::string{text};
      run.layers = {run.text};
      run.opaque = depth > max_nesting ? "commands nested too deep"
                                       : "troupe cannot parse it: " + syntax.unknown;
      out_.commands.push_back(std::move(run));
      return;
    }
    for (auto& command : syntax.commands)
      simple(command, depth);
  }

private:
  shell_line& out_;

  static std::string joined(const words& w, size_t from) {
    std::string text;
    for (size_t i = from; i < w.size(); ++i) {
      if (i > from)
        text += ' ';
      text += w[i].text;
    }
    return text;
  }

  void opaque(shell_run run, std::string why) {
    run.opaque = std::move(why);
    out_.commands.push_back(std::move(run));
  }

  void simple(const shell_command& command, int depth) {
    for (auto& redirect : command.redirects) {
      const auto& target = redirect.target;
      // bash opens /dev/tcp/HOST/PORT and /dev/udp/… itself: a network connection.
      if (!one_of(redirect.op, {"<<", "<<-", "<<<"}) &&
          (starts_with(target.text, "/dev/tcp/") || starts_with(target.text, "/dev/udp/"))) {
        shell_run run;
        run.text = redirect.op + " " + target.text;
        run.layers = {run.text};
        opaque(std::move(run), "a redirection to " + target.text + " opens a network connection");
        continue;
      }
      if (!redirect.writes_file())
        continue;
      // `~+` is the working directory, `~-` the previous one, `~user` another home.
      bool other_tilde = starts_with(target.text, "~") && target.text != "~" &&
                         !starts_with(target.text, "~/");
      if (target.expands || target.globs || other_tilde) {
        out_.writes.push_back({target.text, true});
      } else if (!one_of(target.text, {"/dev/null", "/dev/stdout", "/dev/stderr"})) {
        out_.writes.push_back({target.text, false});
      }
    }
    for (auto& assignment : command.assignments)
      if (changes_what_runs(assigned_name(assignment.text))) {
        shell_run run;
        run.text = assignment.text;
        run.layers = {run.text};
        opaque(std::move(run), "it sets " + std::string{assigned_name(assignment.text)} +
                                 ", which changes what later commands run");
      }
    if (command.words.empty())
      return;
    const auto& w = command.words;
    shell_run run;
    size_t k = 0;
    std::string name;
    while (true) {
      if (w[k].expands) {
        run.layers.push_back(joined(w, k));
        run.text = run.layers.front();
        return opaque(std::move(run), "its command name comes from an expansion");
      }
      if (w[k].globs) {
        run.layers.push_back(joined(w, k));
        run.text = run.layers.front();
        return opaque(std::move(run), "its command name is a glob pattern");
      }
      name = base_name(w[k].text);
      auto text = name;
      if (k + 1 < w.size())
        text += ' ' + joined(w, k + 1);
      run.layers.push_back(text);
      auto wrapper = unwrap(name, w, k);
      if (!wrapper || wrapper->kind == unwrapped::itself)
        break;
      if (wrapper->kind == unwrapped::opaque) {
        run.text = run.layers.front();
        return opaque(std::move(run), wrapper->why);
      }
      if (run.open_ended) {
        run.text = run.layers.front();
        return opaque(std::move(run), "xargs gives " + name + " the command it runs");
      }
      if (name == "sudo" || name == "doas")
        run.must_allow.push_back(text);
      if (name == "xargs")
        run.open_ended = true;
      if (wrapper->command >= w.size()) {
        if (name != "xargs")
          break; // a wrapper with nothing to run is itself
        name = "echo"; // xargs without a command runs echo
        run.layers.push_back(name);
        break;
      }
      k = wrapper->command;
    }
    run.text = run.layers.back();
    run.must_allow.push_back(run.text);
    if (name == "echo" && k < w.size() && base_name(w[k].text) != "echo")
      run.words = {"echo"}; // xargs without a command
    else
      for (size_t i = k; i < w.size(); ++i)
        run.words.push_back(i == k ? name : w[i].text);
    auto why = opaque_reason(name, w, k, run.open_ended, depth);
    if (why == "parsed") // what it runs is judged on its own; a deny rule still sees it, and
      run.must_allow.pop_back(); // a privilege wrapper around it (`sudo sh -c`) is still needed
    if (why.empty() || why == "parsed") {
      out_.commands.push_back(std::move(run));
    } else {
      run.text = run.layers.front(); // the whole command, wrappers and all
      opaque(std::move(run), why);
    }
  }

  // Why the command `name` (at w[k]) runs code troupe cannot see, or empty; "parsed" when what
  // it runs was analysed in its place.
  std::string opaque_reason(const std::string& name, const words& w, size_t k, bool open_ended,
                            int depth) {
    auto arg = [&](size_t i) -> const std::string& { return w[i].text; };
    if (runs_other_commands(name))
      return name + " runs commands troupe cannot see";
    if (is_shell(name))
      return shell_reason(name, w, k, open_ended, depth);
    if (name == "eval") {
      if (open_ended)
        return "xargs gives eval its code";
      for (size_t i = k + 1; i < w.size(); ++i)
        if (w[i].expands || w[i].globs)
          return "eval runs a string made when it runs";
      if (k + 1 == w.size())
        return {};
      line(joined(w, k + 1), depth + 1);
      return "parsed";
    }
    if (name == "find" || name == "gfind" || name == "bfs" || name == "fd" || name == "fdfind") {
      if (open_ended)
        return "xargs gives " + name + " arguments that could run commands";
      for (size_t i = k + 1; i < w.size(); ++i)
        if (one_of(arg(i), {"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint",
                            "-fprint0", "-fprintf", "-fls", "-x", "-X", "--exec",
                            "--exec-batch"}) ||
            w[i].expands)
          return name + " " + arg(i) + " runs commands or changes files";
      return {};
    }
    if (is_interpreter(name)) {
      if (open_ended)
        return "xargs gives " + name + " its code";
      if (k + 1 == w.size())
        return name + " reads its program from its input";
      for (size_t i = k + 1; i < w.size(); ++i) {
        const auto& a = arg(i);
        if (a == "-")
          return name + " reads its program from its input";
        if (starts_with(a, "--")) {
          for (auto code : {"--eval", "--print", "--exec", "--execute", "--command", "--code"})
            if (starts_with(a, code))
              return name + " " + a + " runs code given on the line";
          continue;
        }
        if (a.size() < 2 || a[0] != '-')
          break; // the script or the first argument: the options end
        if (a.find_first_of("ceErpR", 1) != std::string::npos)
          return name + " " + a + " runs code given on the line";
      }
      if (k + 1 < w.size() && one_of(arg(k + 1), {"eval", "repl"}))
        return name + " " + arg(k + 1) + " runs code given on the line";
      return {};
    }
    if (name == "awk" || name == "gawk" || name == "mawk" || name == "nawk")
      return awk_reason(name, w, k, open_ended);
    if (name == "hash") {
      for (size_t i = k + 1; i < w.size(); ++i)
        if (starts_with(arg(i), "-") && arg(i).find('p') != std::string::npos)
          return "hash -p changes what a command name runs";
      return {};
    }
    if (name == "printf") {
      for (size_t i = k + 1; i < w.size(); ++i) {
        if (arg(i) == "--" || !starts_with(arg(i), "-"))
          break;
        if (starts_with(arg(i), "-v")) {
          if (arg(i) == "-v" && i + 1 >= w.size())
            break;
          const auto& target = arg(i) == "-v" ? w[i + 1] : w[i];
          auto set = arg(i) == "-v" ? std::string_view{target.text}
                                    : std::string_view{target.text}.substr(2);
          auto why = variable_problem("printf -v", target, set);
          if (!why.empty())
            return why;
        }
      }
      return {};
    }
    if (name == "let")
      return "let evaluates arithmetic, where a name's value can run commands";
    if (name == "test" || name == "[") {
      for (size_t i = k + 1; i + 1 < w.size(); ++i)
        if (arg(i) == "-v") {
          auto why = variable_problem(name + " -v", w[i + 1], arg(i + 1));
          if (!why.empty())
            return why;
        }
      return {};
    }
    if (one_of(name, {"export", "declare", "typeset", "local", "readonly", "read", "mapfile",
                      "readarray", "getopts", "unset", "wait"})) {
      // Options that take a value, per builtin; read's -a and wait's -p name a variable.
      std::string_view valued = name == "read"                                  ? "dinNptu"
                                : name == "mapfile" || name == "readarray"     ? "dnOsuc"
                                                                                : "";
      bool names_follow = name != "wait";
      for (size_t i = k + 1; i < w.size(); ++i) {
        if (w[i].expands && starts_with(arg(i), "-"))
          return name + " with options made when it runs";
        if (arg(i) == "--")
          continue;
        if (starts_with(arg(i), "-") || starts_with(arg(i), "+")) {
          if (one_of(name, {"mapfile", "readarray"}) && short_cluster_has(arg(i), "C"))
            return name + " -C runs a callback, code troupe cannot see";
          if (one_of(name, {"declare", "typeset", "local"}) && arg(i).find('n') != std::string::npos)
            return name + " -n makes a name refer to another variable";
          if (one_of(name, {"declare", "typeset", "local", "export", "readonly"}) &&
              short_cluster_has(arg(i), "i"))
            return name + " -i evaluates values as arithmetic, which can run commands";
          if (name == "wait" && short_cluster_has(arg(i), "p"))
            names_follow = true;
          auto last = arg(i).back();
          if (arg(i).size() == 2 && valued.find(last) != std::string_view::npos)
            ++i; // its value
          continue;
        }
        if (!names_follow)
          continue;
        auto why = variable_problem(name, w[i], assigned_name(arg(i)));
        if (!why.empty())
          return why;
      }
    }
    if (name == "git")
      return git_reason(w, k);
    if (name == "sed" || name == "gsed")
      return sed_reason(name, w, k, open_ended);
    if (name == "tar" || name == "gtar" || name == "bsdtar") {
      for (size_t i = k + 1; i < w.size(); ++i) {
        const auto& a = arg(i);
        if (a == "--checkpoint" || starts_with(a, "--checkpoint="))
          continue;
        for (auto runs : {"to-command", "use-compress-program", "checkpoint-action",
                          "info-script", "new-volume-script", "rsh-command", "rmt-command"})
          if (long_option(a, runs, 4))
            return name + " " + a + " runs a command";
        // -I and -F run a program, in a cluster (`-xIf`) or the old form's first word (`xIf`)
        if (short_cluster_has(a, "IF") ||
            (i == k + 1 && !starts_with(a, "-") && a.find_first_of("IF") != std::string::npos))
          return name + " " + a + " runs a command (-I or -F)";
        if (w[i].expands)
          return name + " with arguments made when it runs";
      }
      return {};
    }
    if (name == "sort") {
      for (size_t i = k + 1; i < w.size(); ++i)
        if (long_option(arg(i), "compress-program", 3) || w[i].expands)
          return "sort " + arg(i) + " runs a compression program";
      return {};
    }
    if (name == "rg") {
      for (size_t i = k + 1; i < w.size(); ++i)
        if (arg(i) == "--pre" || starts_with(arg(i), "--pre=") || w[i].expands)
          return "rg " + arg(i) + " runs a preprocessor";
      return {};
    }
    return {};
  }

  std::string shell_reason(const std::string& name, const words& w, size_t k, bool open_ended,
                           int depth) {
    if (one_of(name, {"fish", "csh", "tcsh"}))
      return name + " is a shell troupe does not parse";
    if (open_ended)
      return "xargs gives " + name + " its script";
    bool command_string = false;
    size_t i = k + 1;
    for (; i < w.size(); ++i) {
      const auto& a = w[i].text;
      if (w[i].expands)
        return name + " with options made when it runs";
      if (a == "--" || a == "-") {
        ++i;
        break;
      }
      if (starts_with(a, "--")) {
        if (one_of(a, {"--norc", "--noprofile", "--login", "--posix", "--noediting",
                       "--restricted", "--verbose"}))
          continue;
        return name + " " + a + " (an option troupe does not know)";
      }
      if (a.size() < 2 || (a[0] != '-' && a[0] != '+'))
        break;
      for (size_t c = 1; c < a.size(); ++c) {
        if (a[c] == 'c') {
          command_string = true;
        } else if (a[c] == 'o' || a[c] == 'O') {
          ++i; // its value is the next word
        } else if (std::string_view{"eilxuvnrpfhkmBCEHPTa"}.find(a[c]) == std::string_view::npos) {
          return name + " " + a + " (an option troupe does not know)";
        }
      }
    }
    if (!command_string)
      return name + " runs a script file or its input";
    if (i >= w.size())
      return name + " -c without a command";
    if (w[i].expands || w[i].globs)
      return name + " -c runs a string made when it runs";
    line(w[i].text, depth + 1);
    return "parsed";
  }

  // git's options before its subcommand that run commands: `-c alias.x='!cmd'`,
  // `-c core.hooksPath=…`, `--config-env`, `--exec-path=DIR`.
  static std::string git_reason(const words& w, size_t k) {
    for (size_t i = k + 1; i < w.size(); ++i) {
      const auto& a = w[i].text;
      if (w[i].expands && starts_with(a, "-"))
        return "git with options made when it runs";
      if (!starts_with(a, "-"))
        return git_subcommand_reason(w, i);
      if (a == "-c" || starts_with(a, "--config-env") || starts_with(a, "--exec-path="))
        return "git " + a + " sets configuration that can run commands";
      if (one_of(a, {"-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix"}))
        ++i; // its value
    }
    return {};
  }

  // Subcommand options that run a program: `--upload-pack`/`-u` (run even for a local
  // repository), `--receive-pack`, `--exec`, `rebase -x`, `grep -O`, `difftool -x`, and
  // `clone -c` (configuration for the new repository: its hooks run during the clone).
  static std::string git_subcommand_reason(const words& w, size_t sub) {
    const auto& name = w[sub].text;
    if (name == "filter-branch")
      return "git filter-branch runs commands troupe cannot see";
    // Configuration written now runs later: an `alias.x = !cmd`, a `core.fsmonitor`.
    if (name == "config") {
      bool reads = std::any_of(w.begin() + static_cast<std::ptrdiff_t>(sub) + 1, w.end(),
                               [](const shell_word& a) {
                                 return one_of(a.text, {"--get", "--get-all", "--get-regexp",
                                                        "--get-urlmatch", "-l", "--list", "get",
                                                        "list"});
                               });
      if (!reads)
        return "git config writes configuration that can run commands";
    }
    for (size_t i = sub + 1; i < w.size(); ++i) {
      const auto& a = w[i].text;
      if (w[i].expands && starts_with(a, "-"))
        return "git " + name + " with options made when it runs";
      bool runs = starts_with(a, "--upload-pack") || starts_with(a, "--receive-pack") ||
                  starts_with(a, "--exec") || starts_with(a, "--extcmd") ||
                  starts_with(a, "--open-files-in-pager") ||
                  (one_of(name, {"rebase", "difftool"}) && short_cluster_has(a, "x")) ||
                  (name == "grep" && short_cluster_has(a, "O")) ||
                  (one_of(name, {"clone", "fetch", "pull", "ls-remote"}) && a == "-u") ||
                  (name == "clone" && (a == "-c" || starts_with(a, "--config"))) ||
                  (name == "submodule" && a == "foreach") || (name == "bisect" && a == "run");
      if (runs)
        return "git " + name + " " + a + " runs commands troupe cannot see";
    }
    return {};
  }

  static std::string sed_reason(const std::string& name, const words& w, size_t k,
                                bool open_ended) {
    if (open_ended)
      return "xargs gives " + name + " its script";
    bool sandboxed = false, script_given = false;
    std::vector<const shell_word*> scripts;
    for (size_t i = k + 1; i < w.size(); ++i) {
      const auto& a = w[i].text;
      if (a == "--sandbox")
        sandboxed = true;
      if (a == "--")
        break;
      if (a == "-e" || a == "--expression") {
        if (i + 1 < w.size())
          scripts.push_back(&w[++i]);
        script_given = true;
      } else if (starts_with(a, "--expression=")) {
        script_given = true;
      } else if (a == "-f" || long_option(a, "file", 3) || short_cluster_has(a, "f")) {
        return name + " " + a + " runs a script from a file";
      } else if (a == "-l") {
        ++i;
      } else if (!starts_with(a, "-") && !script_given) {
        scripts.push_back(&w[i]);
        script_given = true;
      } else if (short_cluster_has(a, "e") && a.back() == 'e' && a.find('e') + 1 == a.size()) {
        if (i + 1 < w.size()) // `-ne SCRIPT`
          scripts.push_back(&w[++i]);
        script_given = true;
      } else if (short_cluster_has(a, "e")) {
        return name + " " + a + " (a script troupe does not read)";
      }
    }
    if (sandboxed)
      return {}; // --sandbox refuses e, w and r
    for (size_t i = k + 1; i < w.size(); ++i)
      if (starts_with(w[i].text, "--expression=") &&
          sed_script_runs(std::string_view{w[i].text}.substr(13)))
        return name + " script runs a command or writes a file (e, w, W)";
    for (auto script : scripts) {
      if (script->expands)
        return name + " runs a script made when it runs";
      if (sed_script_runs(script->text))
        return name + " script runs a command or writes a file (e, w, W)";
    }
    return {};
  }

  static std::string awk_reason(const std::string& name, const words& w, size_t k,
                                bool open_ended) {
    if (open_ended)
      return "xargs gives " + name + " its program";
    std::optional<size_t> program;
    for (size_t i = k + 1; i < w.size() && !program; ++i) {
      const auto& a = w[i].text;
      if (a == "--") {
        if (i + 1 < w.size())
          program = i + 1;
        break;
      }
      if (one_of(a, {"-f", "-i", "-l", "--file", "--include", "--load", "-E", "--exec"}) ||
          starts_with(a, "--file=") || starts_with(a, "--include=") ||
          starts_with(a, "--load="))
        return name + " " + a + " runs a program from a file";
      if (one_of(a, {"-e", "--source"})) {
        program = i + 1;
      } else if (one_of(a, {"-F", "-v"})) {
        ++i;
      } else if (a.size() < 2 || a[0] != '-') {
        program = i;
      }
    }
    if (!program || *program >= w.size())
      return {};
    const auto& text = w[*program];
    if (text.expands)
      return name + " runs a program made when it runs";
    for (auto runs : {"system", "|", "@"})
      if (text.text.find(runs) != std::string::npos)
        return name + " program uses " + runs + ", which runs commands";
    return {};
  }
};

} // namespace

shell_line analyse_command_line(std::string_view line) {
  shell_line out;
  analyser{out}.line(line, 0);
  // A line that changes directory (anywhere: a loop runs its body again) writes a relative
  // path somewhere other than the workspace it is judged against.
  bool moves = std::any_of(out.commands.begin(), out.commands.end(), [](const shell_run& run) {
    return !run.words.empty() && one_of(run.words[0], {"cd", "pushd", "popd"});
  });
  if (moves)
    for (auto& write : out.writes)
      if (!starts_with(write.path, "/") && !starts_with(write.path, "~/"))
        write.opaque = true;
  return out;
}

bool has_subcommands(std::string_view program) {
  return one_of(program, {"git", "npm", "yarn", "pnpm", "cargo", "go", "docker", "podman",
                          "kubectl", "pip", "pip3", "gh", "make", "apt", "apt-get", "brew",
                          "systemctl", "dotnet", "bazel", "poetry", "uv", "helm", "terraform",
                          "gradle", "mvn", "bundle", "rake", "composer", "conda", "bun", "deno"});
}

} // namespace troupe
