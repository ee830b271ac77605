#include "tools/shell_syntax.hpp"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <utility>

namespace troupe {

bool shell_redirect::writes_file() const {
  if (op == ">" || op == ">>" || op == ">|" || op == "&>" || op == "&>>" || op == "<>")
    return true;
  // `>&2` and `>&-` duplicate or close; `>& file` is `&> file`.
  if (op == ">&")
    return target.text != "-" && (target.text.empty() ||
                                  !std::all_of(target.text.begin(), target.text.end(),
                                               [](unsigned char c) { return std::isdigit(c); }));
  return false;
}

namespace {

// Only spaces and tabs separate words, as in bash: `\v`, `\f` and `\r` are part of a word (so a
// `#` after one is not a comment).
bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

bool is_meta(char c) {
  return is_blank(c) || c == '\n' || c == ';' || c == '&' || c == '|' || c == '<' || c == '>' ||
         c == '(' || c == ')';
}

bool is_name_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

bool is_hex(char c) {
  return std::isxdigit(static_cast<unsigned char>(c)) != 0;
}

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) {
    return std::isdigit(c) != 0;
  });
}

// What makes the inside of `${…}` something the parser cannot judge, or nullptr: quotes or
// substitutions, indirection (`${!x}` reads the name to expand from x), and arithmetic on
// names (an array subscript `${a[i]}`, an offset `${x:n}`), since evaluating a name whose
// value is `a[$(cmd)]` runs cmd.
const char* brace_problem(std::string_view inside) {
  if (inside.find_first_of("$`'\"{\\") != std::string_view::npos)
    return "a ${…} expansion with quotes or substitutions inside";
  size_t j = 0;
  bool indirect = false;
  if (j < inside.size() && (inside[j] == '!' || inside[j] == '#') && inside.size() > 1) {
    indirect = inside[j] == '!';
    ++j;
  }
  auto name_start = j;
  while (j < inside.size() && is_name_char(inside[j]))
    ++j;
  if (j == name_start && j < inside.size() && std::string_view{"@*#?$!-"}.find(inside[j]) != std::string_view::npos)
    ++j;
  std::string_view subscript;
  bool has_subscript = false;
  if (j < inside.size() && inside[j] == '[') {
    auto close = inside.find(']', j);
    if (close == std::string_view::npos)
      return "an unclosed array subscript in ${…}";
    subscript = inside.substr(j + 1, close - j - 1);
    has_subscript = true;
    if (!all_digits(subscript) && subscript != "@" && subscript != "*")
      return "an array subscript (arithmetic on names) in ${…}";
    j = close + 1;
  }
  auto rest = inside.substr(j);
  // `${!prefix*}` and `${!a[@]}` list names; any other `${!…}` expands a name read from a value.
  if (indirect && !(rest == "*" || rest == "@" ||
                    (rest.empty() && has_subscript && (subscript == "@" || subscript == "*"))))
    return "an indirect ${!…} expansion";
  if (!rest.empty() && rest[0] == ':' &&
      (rest.size() == 1 || std::string_view{"-=+?"}.find(rest[1]) == std::string_view::npos) &&
      std::any_of(rest.begin(), rest.end(), [](char c) { return is_name_start(c); }))
    return "a ${x:offset} with names (arithmetic on names)";
  return nullptr;
}

// What in an unquoted here-document body (its line continuations joined) runs or evaluates
// something, or nullptr.
const char* heredoc_problem(std::string_view body) {
  if (body.find("$(") != std::string_view::npos || body.find('`') != std::string_view::npos)
    return "a here-document substitutes commands";
  if (body.find("$[") != std::string_view::npos)
    return "a here-document with $[ ] arithmetic";
  for (auto at = body.find("${"); at != std::string_view::npos; at = body.find("${", at + 2)) {
    auto close = body.find('}', at);
    if (close == std::string_view::npos)
      return "a here-document with an unclosed ${";
    if (auto why = brace_problem(body.substr(at + 2, close - at - 2)))
      return why;
  }
  return nullptr;
}

class parser {
public:
  parser(std::string_view text, int depth, shell_syntax& out) : s_(text), depth_(depth), out_(out) {}

  bool parse_all() {
    if (depth_ < 0)
      return fail("substitutions nested too deep");
    if (!parse_list({}))
      return false;
    if (i_ < s_.size())
      return fail(std::string{"unexpected '"} + s_[i_] + "'");
    if (!heredocs_.empty())
      return fail("a here-document has no body");
    return true;
  }

private:
  struct pending_heredoc {
    std::string delimiter;
    bool strip_tabs = false;
    bool quoted = false;
  };

  std::string_view s_;
  size_t i_ = 0;
  int depth_;
  shell_syntax& out_;
  std::vector<pending_heredoc> heredocs_;

  bool fail(std::string why) {
    if (out_.unknown.empty())
      out_.unknown = std::move(why);
    return false;
  }

  bool at_end() const { return i_ >= s_.size(); }
  char peek(size_t ahead = 0) const { return i_ + ahead < s_.size() ? s_[i_ + ahead] : '\0'; }

  // Blanks, line continuations and comments: a `#` where bash starts a word, at the start or
  // after a blank, a newline or an operator (a `#` that continues a word, as after `<(…)`, is
  // read with the word).
  void skip_blanks() {
    while (!at_end()) {
      if (is_blank(s_[i_])) {
        ++i_;
      } else if (s_[i_] == '\\' && peek(1) == '\n') {
        i_ += 2;
      } else if (s_[i_] == '#' &&
                 (i_ == 0 || is_blank(s_[i_ - 1]) ||
                  std::string_view{"\n;&|()<>"}.find(s_[i_ - 1]) != std::string_view::npos)) {
        while (!at_end() && s_[i_] != '\n')
          ++i_;
      } else {
        return;
      }
    }
  }

  // A newline ends the line that named here-documents: their bodies follow it.
  bool newline() {
    ++i_;
    for (auto& doc : std::exchange(heredocs_, {})) {
      bool closed = false;
      while (!at_end()) {
        // In an unquoted body bash joins a line ending in `\` to the next before it compares
        // the delimiter and expands (`$\` then `(cmd)` is `$(cmd)`).
        std::string line;
        while (true) {
          auto end = s_.find('\n', i_);
          auto piece = s_.substr(i_, end == std::string_view::npos ? std::string_view::npos : end - i_);
          i_ = end == std::string_view::npos ? s_.size() : end + 1;
          size_t backslashes = 0;
          while (backslashes < piece.size() && piece[piece.size() - 1 - backslashes] == '\\')
            ++backslashes;
          if (doc.quoted || backslashes % 2 == 0 || end == std::string_view::npos) {
            line += piece;
            break;
          }
          piece.remove_suffix(1);
          line += piece;
        }
        if (!line.empty() && line.back() == '\r')
          line.pop_back();
        std::string_view text = line;
        if (doc.strip_tabs)
          while (!text.empty() && text.front() == '\t')
            text.remove_prefix(1);
        if (text == doc.delimiter) {
          closed = true;
          break;
        }
        if (!doc.quoted)
          if (auto why = heredoc_problem(text))
            return fail(why);
      }
      if (!closed)
        return fail("a here-document is not closed by " + doc.delimiter);
    }
    return true;
  }

  // True when the unquoted word `word` starts here (a reserved word stands alone).
  bool at_word(std::string_view word) const {
    if (s_.substr(i_, word.size()) != word)
      return false;
    auto after = i_ + word.size();
    return after >= s_.size() || is_meta(s_[after]);
  }

  bool expect_word(std::string_view word) {
    skip_blanks();
    if (!at_word(word))
      return fail("expected '" + std::string{word} + "'");
    i_ += word.size();
    return true;
  }

  // Commands separated by ; & && || and newlines, up to the end, a `)` or one of `stops`.
  bool parse_list(std::initializer_list<std::string_view> stops) {
    static constexpr std::string_view closers[] = {"then", "do",   "done", "fi", "elif",
                                                   "else", "esac", "}",    "in"};
    while (true) {
      skip_blanks();
      if (at_end() || peek() == ')')
        return true;
      if (peek() == '\n') {
        if (!newline())
          return false;
        continue;
      }
      if (peek() == ';' || (peek() == '&' && peek(1) != '>')) {
        if (peek() == ';' && peek(1) == ';')
          return fail("';;' outside a case");
        ++i_;
        continue;
      }
      if (peek() == '|' && peek(1) == '|') { // `a || b`: the second pipeline follows
        i_ += 2;
        continue;
      }
      if (peek() == '&' && peek(1) == '&') {
        i_ += 2;
        continue;
      }
      for (auto stop : stops)
        if (at_word(stop))
          return true;
      for (auto closer : closers)
        if (at_word(closer))
          return fail("unexpected '" + std::string{closer} + "'");
      if (!parse_pipeline())
        return false;
    }
  }

  bool parse_pipeline() {
    skip_blanks();
    if (at_word("!"))
      ++i_;
    while (true) {
      if (!parse_command())
        return false;
      skip_blanks();
      if (peek() != '|' || peek(1) == '|')
        return true;
      i_ += peek(1) == '&' ? 2 : 1;
      skip_blanks();
      while (peek() == '\n') {
        if (!newline())
          return false;
        skip_blanks();
      }
    }
  }

  bool parse_command() {
    skip_blanks();
    if (peek() == '(') {
      if (peek(1) == '(')
        return fail("(( )) arithmetic commands");
      ++i_;
      if (!parse_list({}))
        return false;
      if (peek() != ')')
        return fail("a subshell is not closed");
      ++i_;
      return trailing_redirects();
    }
    if (at_word("{")) {
      ++i_;
      return parse_list({"}"}) && expect_word("}") && trailing_redirects();
    }
    if (at_word("if")) {
      i_ += 2;
      if (!parse_list({"then"}) || !expect_word("then") || !parse_list({"elif", "else", "fi"}))
        return false;
      while (at_word("elif")) {
        i_ += 4;
        if (!parse_list({"then"}) || !expect_word("then") || !parse_list({"elif", "else", "fi"}))
          return false;
      }
      if (at_word("else")) {
        i_ += 4;
        if (!parse_list({"fi"}))
          return false;
      }
      return expect_word("fi") && trailing_redirects();
    }
    if (at_word("while") || at_word("until")) {
      i_ += 5;
      return parse_list({"do"}) && expect_word("do") && parse_list({"done"}) &&
             expect_word("done") && trailing_redirects();
    }
    if (at_word("for"))
      return parse_for();
    if (at_word("[["))
      return parse_test();
    for (auto word : {"case", "select", "function", "coproc", "]]"})
      if (at_word(word))
        return fail(std::string{"'"} + word + "' commands");
    return parse_simple_command();
  }

  bool parse_for() {
    i_ += 3;
    skip_blanks();
    if (peek() == '(')
      return fail("for (( )) loops");
    shell_word name;
    if (!read_word(name))
      return false;
    if (name.text.empty() || name.expands || name.globs || !is_name_start(name.text[0]) ||
        !std::all_of(name.text.begin(), name.text.end(), is_name_char))
      return fail("a for loop without a variable name");
    skip_blanks();
    while (peek() == '\n') {
      if (!newline())
        return false;
      skip_blanks();
    }
    if (at_word("in")) {
      i_ += 2;
      // The list's words are data; the substitutions in them run (read_word parses them).
      while (true) {
        skip_blanks();
        if (at_end() || peek() == ';' || peek() == '\n')
          break;
        if (is_meta(peek()))
          return fail("unexpected '" + std::string(1, peek()) + "' in a for list");
        shell_word value;
        if (!read_word(value))
          return false;
      }
    }
    skip_blanks();
    if (peek() == ';')
      ++i_;
    skip_blanks();
    while (peek() == '\n') {
      if (!newline())
        return false;
      skip_blanks();
    }
    return expect_word("do") && parse_list({"done"}) && expect_word("done") &&
           trailing_redirects();
  }

  // `[[ … ]]`: words and operators, where < > && || ( ) ! are not the shell's operators. Its
  // substitutions, process substitutions included, are parsed as everywhere; the operands of
  // its arithmetic comparisons and of -v are evaluated as arithmetic, so only integers and
  // plain names are understood there.
  bool parse_test() {
    i_ += 2;
    std::vector<shell_word> words;
    while (true) {
      skip_blanks();
      if (at_end())
        return fail("'[[' is not closed");
      if (peek() == '\n') {
        if (!newline())
          return false;
        continue;
      }
      if (at_word("]]")) {
        i_ += 2;
        return test_arithmetic(words) && trailing_redirects();
      }
      char c = peek();
      if (c == ';')
        return fail("';' inside '[[ ]]'");
      if ((c == '<' || c == '>') && peek(1) == '(') {
        shell_word word;
        if (!read_process_substitution(word))
          return false;
        words.push_back(std::move(word));
        continue;
      }
      if (c == '(' || c == ')' || c == '<' || c == '>' || c == '&' || c == '|' || c == '!') {
        ++i_;
        continue;
      }
      shell_word word;
      if (!read_word(word))
        return false;
      words.push_back(std::move(word));
    }
  }

  bool test_arithmetic(const std::vector<shell_word>& words) {
    auto integer = [](const shell_word& w) {
      std::string_view text = w.text;
      if (!text.empty() && (text[0] == '-' || text[0] == '+'))
        text.remove_prefix(1);
      return !w.expands && all_digits(text);
    };
    for (size_t j = 0; j < words.size(); ++j) {
      const auto& op = words[j].text;
      if (op == "-eq" || op == "-ne" || op == "-lt" || op == "-le" || op == "-gt" || op == "-ge") {
        if (j == 0 || j + 1 >= words.size() || !integer(words[j - 1]) || !integer(words[j + 1]))
          return fail("arithmetic on names or expansions in '[[ ]]'");
      } else if (op == "-v" && j + 1 < words.size() &&
                 (words[j + 1].expands || words[j + 1].text.find('[') != std::string::npos)) {
        return fail("'[[ -v ]]' with an array subscript or an expansion");
      }
    }
    return true;
  }

  // `<(…)` or `>(…)`: its list is parsed, and the word goes on after the `)` (`<(…)#` is one
  // word, not a comment).
  bool read_process_substitution(shell_word& word) {
    auto start = i_;
    i_ += 2;
    if (!parse_nested_list())
      return false;
    word.text = std::string{s_.substr(start, i_ - start)};
    word.expands = true;
    if (!at_end() && !is_meta(peek()))
      return read_word(word);
    return true;
  }

  // Redirections after a compound command belong to it: a command without words holds them.
  bool trailing_redirects() {
    shell_command holder;
    while (true) {
      skip_blanks();
      if (!at_redirect())
        break;
      if (!parse_redirect(holder))
        return false;
    }
    if (!holder.redirects.empty())
      out_.commands.push_back(std::move(holder));
    skip_blanks();
    if (!at_end() && !is_meta(peek()))
      return fail("unexpected text after a compound command");
    return true;
  }

  bool at_redirect() const {
    size_t j = i_;
    while (j < s_.size() && std::isdigit(static_cast<unsigned char>(s_[j])))
      ++j;
    if (j >= s_.size())
      return false;
    if (s_[j] == '<' || s_[j] == '>')
      return !(j + 1 < s_.size() && s_[j + 1] == '(');
    return j == i_ && s_[j] == '&' && j + 1 < s_.size() && s_[j + 1] == '>';
  }

  bool parse_redirect(shell_command& cmd) {
    while (std::isdigit(static_cast<unsigned char>(peek())))
      ++i_;
    static constexpr std::string_view ops[] = {"&>>", "&>", "<<<", "<<-", ">>", ">|", ">&",
                                               "<<",  "<&", "<>",  ">",   "<"};
    shell_redirect redirect;
    for (auto op : ops)
      if (s_.substr(i_, op.size()) == op) {
        redirect.op = std::string{op};
        i_ += op.size();
        break;
      }
    skip_blanks();
    if (at_end() || is_meta(peek()))
      return fail("a redirection without a target");
    if (redirect.op == "<<" || redirect.op == "<<-") {
      auto start = i_;
      if (!read_word(redirect.target))
        return false;
      auto raw = s_.substr(start, i_ - start);
      heredocs_.push_back({redirect.target.text, redirect.op == "<<-",
                           raw.find_first_of("'\"\\") != std::string_view::npos});
      redirect.target.expands = false;
    } else if (!read_word(redirect.target)) {
      return false;
    }
    cmd.redirects.push_back(std::move(redirect));
    return true;
  }

  bool parse_simple_command() {
    shell_command cmd;
    while (true) {
      skip_blanks();
      if (at_end())
        break;
      char c = peek();
      if ((c == '<' || c == '>') && peek(1) == '(') { // process substitution
        shell_word word;
        if (!read_process_substitution(word))
          return false;
        cmd.words.push_back(std::move(word));
        continue;
      }
      if (at_redirect()) {
        if (!parse_redirect(cmd))
          return false;
        continue;
      }
      if (c == '(')
        return fail(cmd.words.size() == 1 ? "function definitions" : "unexpected '('");
      if (is_meta(c))
        break;
      auto start = i_;
      shell_word word;
      if (!read_word(word))
        return false;
      if (cmd.words.empty() && is_assignment(s_.substr(start, i_ - start))) {
        if (peek() == '(')
          return fail("array assignments");
        cmd.assignments.push_back(std::move(word));
      } else {
        cmd.words.push_back(std::move(word));
      }
    }
    if (cmd.words.empty() && cmd.assignments.empty() && cmd.redirects.empty())
      return fail("a missing command");
    out_.commands.push_back(std::move(cmd));
    return true;
  }

  static bool is_assignment(std::string_view raw) {
    if (raw.empty() || !is_name_start(raw[0]))
      return false;
    size_t j = 1;
    while (j < raw.size() && is_name_char(raw[j]))
      ++j;
    if (j < raw.size() && raw[j] == '+')
      ++j;
    return j < raw.size() && raw[j] == '=';
  }

  // After `$(` or `<(`: a list up to its `)`, which is consumed.
  bool parse_nested_list() {
    if (--depth_ < 0)
      return fail("substitutions nested too deep");
    if (!parse_list({}))
      return false;
    ++depth_;
    if (peek() != ')')
      return fail("a substitution is not closed");
    ++i_;
    return true;
  }

  bool read_word(shell_word& word) {
    bool in_brace = false, brace_list = false, bracket = false;
    auto start = i_;
    while (!at_end()) {
      char c = peek();
      if (is_meta(c))
        break;
      if (c == '\\') {
        if (i_ + 1 >= s_.size()) { // a trailing backslash is itself
          word.text += c;
          ++i_;
        } else if (peek(1) != '\n') {
          word.text += peek(1);
          i_ += 2;
        } else {
          i_ += 2;
        }
        continue;
      }
      if (c == '\'') {
        auto close = s_.find('\'', i_ + 1);
        if (close == std::string_view::npos)
          return fail("an unclosed quote");
        word.text += s_.substr(i_ + 1, close - i_ - 1);
        i_ = close + 1;
        continue;
      }
      if (c == '"') {
        if (!read_double_quoted(word))
          return false;
        continue;
      }
      if (c == '$') {
        if (peek(1) == '\'') {
          if (!read_ansi_c(word))
            return false;
          continue;
        }
        if (peek(1) == '"') { // a translated string: quoted like "…"
          ++i_;
          if (!read_double_quoted(word))
            return false;
          continue;
        }
        if (!read_dollar(word))
          return false;
        continue;
      }
      if (c == '`') {
        if (!read_backticks(word))
          return false;
        continue;
      }
      // A `[` is a glob only with a `]` after it: a lone `[` (the test command) is itself.
      if (c == '*' || c == '?' || (bracket && c == ']'))
        word.globs = true;
      if (c == '[')
        bracket = true;
      // Brace expansion makes `{r,}m` the words `rm m`.
      if (c == '{')
        in_brace = true;
      else if (in_brace && (c == ',' || (c == '.' && peek(1) == '.')))
        brace_list = true;
      else if (c == '}' && brace_list)
        word.globs = true;
      // `@(…)` and the other extended globs would reach a `(` inside the word.
      word.text += c;
      ++i_;
    }
    if (i_ == start)
      return fail("an empty word");
    return true;
  }

  bool read_double_quoted(shell_word& word) {
    ++i_;
    while (true) {
      if (at_end())
        return fail("an unclosed double quote");
      char c = peek();
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c == '\\' && i_ + 1 < s_.size()) {
        char next = peek(1);
        if (next == '\n') {
          i_ += 2;
        } else if (next == '$' || next == '`' || next == '"' || next == '\\') {
          word.text += next;
          i_ += 2;
        } else {
          word.text += c;
          ++i_;
        }
        continue;
      }
      if (c == '$' && peek(1) != '\'' && peek(1) != '"') {
        if (!read_dollar(word))
          return false;
        continue;
      }
      if (c == '`') {
        if (!read_backticks(word))
          return false;
        continue;
      }
      word.text += c;
      ++i_;
    }
  }

  bool read_ansi_c(shell_word& word) {
    i_ += 2;
    while (true) {
      if (at_end())
        return fail("an unclosed $'…' quote");
      char c = peek();
      if (c == '\'') {
        ++i_;
        return true;
      }
      if (c != '\\' || i_ + 1 >= s_.size()) {
        word.text += c;
        ++i_;
        continue;
      }
      char e = peek(1);
      i_ += 2;
      switch (e) {
        case 'a': word.text += '\a'; break;
        case 'b': word.text += '\b'; break;
        case 'e':
        case 'E': word.text += '\x1b'; break;
        case 'f': word.text += '\f'; break;
        case 'n': word.text += '\n'; break;
        case 'r': word.text += '\r'; break;
        case 't': word.text += '\t'; break;
        case 'v': word.text += '\v'; break;
        case '\\':
        case '\'':
        case '"':
        case '?': word.text += e; break;
        case 'x': {
          int value = 0, digits = 0;
          while (digits < 2 && is_hex(peek())) {
            value = value * 16 + std::stoi(std::string(1, peek()), nullptr, 16);
            ++i_;
            ++digits;
          }
          if (digits == 0)
            return fail("a $'\\x' escape without digits");
          word.text += static_cast<char>(value);
          break;
        }
        case 'u':
        case 'U':
        case 'c': return fail(std::string{"the $'\\"} + e + "' escape");
        default:
          if (e >= '0' && e <= '7') {
            int value = e - '0', digits = 1;
            while (digits < 3 && peek() >= '0' && peek() <= '7') {
              value = value * 8 + (peek() - '0');
              ++i_;
              ++digits;
            }
            word.text += static_cast<char>(value);
          } else {
            word.text += '\\';
            word.text += e;
          }
      }
    }
  }

  // `$…` outside single quotes: kept as written, its commands parsed.
  bool read_dollar(shell_word& word) {
    auto start = i_;
    char next = peek(1);
    if (next == '(' && peek(2) == '(') {
      if (!read_arithmetic())
        return false;
    } else if (next == '(') {
      i_ += 2;
      if (!parse_nested_list())
        return false;
    } else if (next == '[') {
      return fail("$[ ] arithmetic");
    } else if (next == '{') {
      auto close = s_.find('}', i_ + 2);
      if (close == std::string_view::npos)
        return fail("an unclosed ${");
      if (auto why = brace_problem(s_.substr(i_ + 2, close - i_ - 2)))
        return fail(why);
      i_ = close + 1;
    } else if (is_name_start(next)) {
      i_ += 2;
      while (is_name_char(peek()))
        ++i_;
    } else if (std::isdigit(static_cast<unsigned char>(next)) ||
               std::string_view{"@*#?$!-"}.find(next) != std::string_view::npos) {
      i_ += 2;
    } else { // a lone `$` is itself
      word.text += '$';
      ++i_;
      return true;
    }
    word.text += s_.substr(start, i_ - start);
    word.expands = true;
    return true;
  }

  // `$(( … ))` holding only numbers and operators: a name is evaluated as arithmetic in turn,
  // and one whose value is `a[$(cmd)]` runs cmd, so names and `$` are not understood.
  bool read_arithmetic() {
    i_ += 3;
    int open = 0;
    while (!at_end()) {
      char c = peek();
      if (c == ')' && open == 0) {
        if (peek(1) != ')')
          return fail("an unclosed $((");
        i_ += 2;
        return true;
      }
      if (c == '(')
        ++open;
      else if (c == ')')
        --open;
      else if (c == '$' || (is_name_start(c) && !is_name_char(s_[i_ - 1])))
        return fail("$(( )) with names or expansions (arithmetic on names)");
      else if (!is_name_char(c) && !is_blank(c) &&
               std::string_view{"+-*/%<>=!&|^~?:,"}.find(c) == std::string_view::npos)
        return fail("$(( )) with anything but plain arithmetic");
      ++i_;
    }
    return fail("an unclosed $((");
  }

  bool read_backticks(shell_word& word) {
    auto start = i_;
    std::string inner;
    ++i_;
    while (true) {
      if (at_end())
        return fail("an unclosed backtick");
      char c = peek();
      if (c == '`')
        break;
      if (c == '\\' && (peek(1) == '$' || peek(1) == '`' || peek(1) == '\\')) {
        inner += peek(1);
        i_ += 2;
        continue;
      }
      inner += c;
      ++i_;
    }
    ++i_;
    if (depth_ <= 0)
      return fail("substitutions nested too deep");
    parser nested{inner, depth_ - 1, out_};
    if (!nested.parse_all())
      return false;
    word.text += s_.substr(start, i_ - start);
    word.expands = true;
    return true;
  }
};

} // namespace

shell_syntax parse_shell(std::string_view line, int depth) {
  shell_syntax syntax;
  parser{line, depth, syntax}.parse_all();
  return syntax;
}

} // namespace troupe
