// The glob matcher: a pattern is compiled into a small automaton (braces are alternation, not
// expanded) and run over the path keeping a set of states, so a match costs O(path × pattern)
// whatever the pattern: no backtracking, no expansion that grows with the number of braces.

#include "tools/path_match.hpp"

#include <bitset>
#include <cstdint>
#include <optional>
#include <vector>

namespace troupe {

namespace {

enum class op : uint8_t {
  literal,   ///< one given character
  not_slash, ///< any one character but '/'
  any,       ///< any one character
  in_class,  ///< one character of classes[arg]
  split,     ///< go on at arg and at arg2
  jump,      ///< go on at arg
  accept,
};

struct instruction {
  op kind = op::accept;
  char c = 0;
  uint32_t arg = 0;
  uint32_t arg2 = 0;
};

struct program {
  std::vector<instruction> code;
  std::vector<std::bitset<256>> classes;
};

// Parses a character class at pattern[p] == '['. Returns the position after it, or nullopt when
// it is not closed (then '[' is a literal). A class never matches '/'.
std::optional<size_t> parse_class(std::string_view pattern, size_t p, std::bitset<256>& set) {
  size_t i = p + 1;
  bool negate = i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^');
  if (negate)
    ++i;
  std::vector<std::pair<char, char>> ranges;
  bool first = true;
  for (; i < pattern.size() && (pattern[i] != ']' || first); ++i, first = false) {
    char low = pattern[i];
    char high = low;
    if (i + 2 < pattern.size() && pattern[i + 1] == '-' && pattern[i + 2] != ']') {
      high = pattern[i + 2];
      i += 2;
    }
    ranges.emplace_back(low, high);
  }
  if (i >= pattern.size())
    return std::nullopt;
  for (unsigned b = 0; b < 256; ++b) {
    char c = static_cast<char>(b);
    bool in = false;
    for (auto [low, high] : ranges)
      in = in || (c >= low && c <= high);
    set[b] = in != negate && c != '/';
  }
  return i + 1;
}

// The '}' closing the brace group opened at pattern[open], within [open, end); npos if none.
size_t closing_brace(std::string_view pattern, size_t open, size_t end) {
  int depth = 0;
  for (size_t i = open; i < end; ++i) {
    if (pattern[i] == '{')
      ++depth;
    else if (pattern[i] == '}' && --depth == 0)
      return i;
  }
  return std::string_view::npos;
}

class compiler {
public:
  explicit compiler(std::string_view pattern) : pattern_(pattern) {}

  std::optional<program> compile(std::string& error) {
    if (pattern_.size() > max_glob_pattern_length) {
      error = "the pattern is longer than " + std::to_string(max_glob_pattern_length) +
              " characters";
      return std::nullopt;
    }
    sequence(0, pattern_.size(), 0);
    if (!error_.empty()) {
      error = error_;
      return std::nullopt;
    }
    emit({op::accept});
    return std::move(program_);
  }

private:
  uint32_t here() const { return static_cast<uint32_t>(program_.code.size()); }
  uint32_t emit(instruction i) {
    program_.code.push_back(i);
    return here() - 1;
  }

  // `(one character of kind)*`: split into the loop or past it.
  void star(op kind) {
    auto loop = emit({op::split});
    emit({kind});
    emit({op::jump, 0, loop});
    program_.code[loop].arg = loop + 1;
    program_.code[loop].arg2 = here();
  }

  // Compiles pattern[from, end).
  void sequence(size_t from, size_t end, int depth) {
    for (size_t p = from; p < end && error_.empty();) {
      char c = pattern_[p];
      if (c == '{') {
        auto close = closing_brace(pattern_, p, end);
        if (close != std::string_view::npos) {
          alternatives(p, close, depth + 1);
          p = close + 1;
          continue;
        }
        emit({op::literal, c});
        ++p;
      } else if (c == '*' && p + 1 < end && pattern_[p + 1] == '*') {
        size_t next = p + 2;
        bool segment = next < end && pattern_[next] == '/';
        if (segment)
          ++next;
        if (next >= pattern_.size() || !segment) {
          star(op::any); // a trailing `**` matches everything left; `**x` any run, '/' too
        } else {
          // `**/`: zero or more whole segments, `([^/]*/)*`.
          auto loop = emit({op::split});
          star(op::not_slash);
          emit({op::literal, '/'});
          emit({op::jump, 0, loop});
          program_.code[loop].arg = loop + 1;
          program_.code[loop].arg2 = here();
        }
        p = next;
      } else if (c == '*') {
        star(op::not_slash);
        ++p;
      } else if (c == '?') {
        emit({op::not_slash});
        ++p;
      } else if (c == '[') {
        std::bitset<256> set;
        if (auto after = parse_class(pattern_.substr(0, end), p, set)) {
          program_.classes.push_back(set);
          emit({op::in_class, 0, static_cast<uint32_t>(program_.classes.size() - 1)});
          p = *after;
        } else {
          emit({op::literal, c});
          ++p;
        }
      } else {
        emit({op::literal, c});
        ++p;
      }
    }
  }

  // Compiles the group pattern[open] == '{' … pattern[close] == '}' as alternation.
  void alternatives(size_t open, size_t close, int depth) {
    if (depth > max_glob_brace_depth) {
      error_ = "braces are nested deeper than " + std::to_string(max_glob_brace_depth);
      return;
    }
    std::vector<std::pair<size_t, size_t>> choices;
    int nested = 0;
    size_t start = open + 1;
    for (size_t i = open + 1; i < close; ++i) {
      if (pattern_[i] == '{')
        ++nested;
      else if (pattern_[i] == '}')
        --nested;
      else if (pattern_[i] == ',' && nested == 0) {
        choices.emplace_back(start, i);
        start = i + 1;
      }
    }
    choices.emplace_back(start, close);
    count_ += choices.size();
    if (count_ > max_glob_alternatives) {
      error_ = "the pattern has more than " + std::to_string(max_glob_alternatives) +
               " brace alternatives";
      return;
    }
    std::vector<uint32_t> jumps_to_end;
    for (size_t k = 0; k < choices.size() && error_.empty(); ++k) {
      bool last = k + 1 == choices.size();
      uint32_t split = 0;
      if (!last)
        split = emit({op::split});
      if (!last)
        program_.code[split].arg = here();
      sequence(choices[k].first, choices[k].second, depth);
      if (!last) {
        jumps_to_end.push_back(emit({op::jump}));
        program_.code[split].arg2 = here();
      }
    }
    for (auto j : jumps_to_end)
      program_.code[j].arg = here();
  }

  std::string_view pattern_;
  program program_;
  size_t count_ = 0;
  std::string error_;
};

// The states reachable from `pc` without reading a character are added to `set`.
class state_set {
public:
  explicit state_set(size_t size) : mark_(size, 0) {}
  void clear() {
    states_.clear();
    ++generation_;
  }
  void add(const program& prog, uint32_t pc, std::vector<uint32_t>& stack) {
    stack.push_back(pc);
    while (!stack.empty()) {
      auto at = stack.back();
      stack.pop_back();
      if (mark_[at] == generation_)
        continue;
      mark_[at] = generation_;
      const auto& i = prog.code[at];
      if (i.kind == op::jump) {
        stack.push_back(i.arg);
      } else if (i.kind == op::split) {
        stack.push_back(i.arg2);
        stack.push_back(i.arg);
      } else {
        states_.push_back(at);
      }
    }
  }
  const std::vector<uint32_t>& states() const { return states_; }

private:
  std::vector<uint32_t> states_;
  std::vector<uint32_t> mark_;
  uint32_t generation_ = 1;
};

bool run(const program& prog, std::string_view path) {
  state_set current{prog.code.size()}, next{prog.code.size()};
  std::vector<uint32_t> stack;
  current.add(prog, 0, stack);
  for (char c : path) {
    next.clear();
    for (auto pc : current.states()) {
      const auto& i = prog.code[pc];
      bool takes = (i.kind == op::literal && i.c == c) || (i.kind == op::not_slash && c != '/') ||
                   i.kind == op::any ||
                   (i.kind == op::in_class && prog.classes[i.arg][static_cast<unsigned char>(c)]);
      if (takes)
        next.add(prog, pc + 1, stack);
    }
    if (next.states().empty())
      return false;
    std::swap(current, next);
  }
  for (auto pc : current.states())
    if (prog.code[pc].kind == op::accept)
      return true;
  return false;
}

} // namespace

std::optional<std::string> glob_pattern_error(std::string_view pattern) {
  std::string error;
  if (compiler{pattern}.compile(error))
    return std::nullopt;
  return "invalid glob pattern: " + error;
}

bool glob_match(std::string_view pattern, std::string_view path) {
  std::string error;
  auto prog = compiler{pattern}.compile(error);
  return prog && run(*prog, path);
}

} // namespace troupe
