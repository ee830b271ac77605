// The permission policy for shell command lines: every command the line runs and every file
// its redirections write is judged on its own, and the line is denied when any part is,
// asked about when any part is, and allowed only when every part is.

#include <algorithm>
#include <cctype>
#include <initializer_list>

#include "tools/permissions.hpp"
#include "tools/shell_commands.hpp"
#include "tools/write.hpp"

namespace troupe {

namespace {

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// True when some continuation of `text` matches `pattern`: what `xargs rm` runs gets more
// arguments from its input.
bool could_match(std::string_view pattern, std::string_view text) {
  std::vector<bool> states(pattern.size() + 1, false), next(pattern.size() + 1);
  auto close = [&](std::vector<bool>& set) { // a `*` may match nothing
    for (size_t p = 0; p < pattern.size(); ++p)
      if (set[p] && pattern[p] == '*')
        set[p + 1] = true;
  };
  states[0] = true;
  close(states);
  for (char c : text) {
    std::fill(next.begin(), next.end(), false);
    bool any = false;
    for (size_t p = 0; p < pattern.size(); ++p) {
      if (!states[p])
        continue;
      if (pattern[p] == '*')
        next[p] = any = true;
      else if (pattern[p] == c)
        next[p + 1] = any = true;
    }
    if (!any)
      return false;
    states.swap(next);
    close(states);
  }
  return true;
}

// `X *` also matches the bare `X` (`shell(git status *)` allows `git status`), and Claude
// Code's `X:*` is `X *`.
bool command_matches(std::string pattern, std::string_view text, bool open_ended) {
  if (ends_with(pattern, ":*"))
    pattern.replace(pattern.size() - 2, 2, " *");
  if (wildcard_match(pattern, text))
    return true;
  if (ends_with(pattern, " *") &&
      wildcard_match(std::string_view{pattern}.substr(0, pattern.size() - 2), text))
    return true;
  return open_ended && could_match(pattern, text);
}

const tool_spec& write_spec() {
  // The write tool's spec: a redirection writes a file as the write tool does, so the same
  // rules and mode judge it. Built once; never changed.
  static const tool_spec spec = write_tool();
  return spec;
}

std::string code_span(const std::string& text) {
  return "`" + text + "`";
}

permission_decision judge_command(const permission_policy& policy, const tool_spec& spec,
                                  const shell_run& run) {
  bool opaque = !run.opaque.empty();
  for (auto& rule : policy.rules.deny) {
    if (rule.tool != spec.name)
      continue;
    if (!rule.pattern)
      return {permission_outcome::deny, "denied by the rule " + rule.text, denial_cause::refused,
              true};
    // What the line runs unseen could be anything the rule names.
    if (opaque)
      return {permission_outcome::deny,
              "denied by the rule " + rule.text + ": " + code_span(run.text) +
                " runs code troupe cannot see (" + run.opaque + ")",
              denial_cause::refused, true};
    for (auto& layer : run.layers)
      if (command_matches(*rule.pattern, layer, run.open_ended))
        return {permission_outcome::deny, "denied by the rule " + rule.text,
                denial_cause::refused, true};
  }
  if (policy.mode == permission_mode::bypass)
    return {permission_outcome::allow, "bypass mode"};
  if (!opaque && run.must_allow.empty())
    return {permission_outcome::allow, "the commands " + code_span(run.text) + " runs are judged"};
  // A bare rule names no pattern to see through: it allows whatever runs, opaque code too.
  auto allowed_by = [&](const std::vector<permission_rule>& rules) -> const permission_rule* {
    for (auto& rule : rules)
      if (rule.tool == spec.name && !rule.pattern)
        return &rule;
    if (opaque)
      return nullptr;
    const permission_rule* first = nullptr;
    for (auto& text : run.must_allow) {
      auto rule = std::find_if(rules.begin(), rules.end(), [&](const permission_rule& r) {
        return r.tool == spec.name && r.pattern && command_matches(*r.pattern, text, false);
      });
      if (rule == rules.end())
        return nullptr;
      if (first == nullptr)
        first = &*rule;
    }
    return first;
  };
  if (auto rule = allowed_by(policy.session_allow))
    return {permission_outcome::allow, "allowed for this session: " + rule->text};
  for (auto& rule : policy.rules.ask)
    if (rule.tool == spec.name &&
        (!rule.pattern || opaque ||
         std::any_of(run.layers.begin(), run.layers.end(), [&](const std::string& layer) {
           return command_matches(*rule.pattern, layer, run.open_ended);
         })))
      return {permission_outcome::ask, "the rule " + rule.text + " asks for approval",
              denial_cause::refused, true};
  if (auto rule = allowed_by(policy.rules.allow))
    return {permission_outcome::allow, "allowed by the rule " + rule->text};
  if (policy.mode == permission_mode::plan) {
    if (!opaque && read_only_command(run.words))
      return {permission_outcome::allow, "read-only"};
    return {permission_outcome::deny,
            "plan mode allows read-only tools and commands only; present the plan instead of "
            "running " +
              code_span(run.text),
            denial_cause::plan_mode};
  }
  if (opaque)
    return {permission_outcome::ask, spec.name + " needs approval: " + code_span(run.text) +
                                       " runs code troupe cannot see (" + run.opaque + ")"};
  return {permission_outcome::ask, spec.name + " needs approval"};
}

permission_decision judge_write(const permission_policy& policy, const shell_write& write) {
  const auto& spec = write_spec();
  if (!write.opaque) {
    auto decision = policy.can_use_tool(spec, {{"path", write.path}});
    if (decision.outcome != permission_outcome::allow)
      decision.reason = "its redirection to " + write.path + ": " + decision.reason;
    return decision;
  }
  for (auto& rule : policy.rules.deny)
    if (rule.tool == spec.name)
      return {permission_outcome::deny,
              "denied by the rule " + rule.text + ": a redirection to " + code_span(write.path) +
                " writes where troupe cannot see",
              denial_cause::refused, true};
  if (policy.mode == permission_mode::bypass)
    return {permission_outcome::allow, "bypass mode"};
  if (policy.mode == permission_mode::plan)
    return {permission_outcome::deny,
            "plan mode allows read-only tools and commands only; present the plan instead of "
            "writing to " +
              code_span(write.path),
            denial_cause::plan_mode};
  return {permission_outcome::ask, "its redirection to " + code_span(write.path) +
                                     " writes where troupe cannot see"};
}

// A line that runs nothing (`X=1`, a comment, `[[ -f x ]]`) is judged as one command: its text,
// which plan mode finds read-only only when the line is empty.
shell_line analysed(const nlohmann::json& input, const tool_spec& spec) {
  std::string line;
  if (auto command = input.find(spec.rule_subject);
      command != input.end() && command->is_string())
    line = command->get<std::string>();
  auto parts = analyse_command_line(line);
  if (parts.commands.empty() && parts.writes.empty()) {
    shell_run nothing;
    nothing.text = std::string{trim(line)};
    nothing.layers = nothing.must_allow = {nothing.text};
    if (!nothing.text.empty())
      nothing.words = {nothing.text};
    parts.commands.push_back(std::move(nothing));
  }
  return parts;
}

std::string rule_for(const std::string& text) {
  auto space = text.find(' ');
  auto program = text.substr(0, space);
  if (space != std::string::npos && has_subcommands(program)) {
    auto rest = text.substr(space + 1);
    auto subcommand = rest.substr(0, rest.find(' '));
    if (!subcommand.empty() && subcommand[0] != '-' &&
        std::all_of(subcommand.begin(), subcommand.end(), [](unsigned char c) {
          return std::isalnum(c) || c == '-' || c == '_' || c == ':' || c == '.';
        }))
      return program + " " + subcommand + " *";
  }
  return program + " *";
}

std::string shell_quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text)
    out += c == '\'' ? std::string{"'\\''"} : std::string(1, c);
  return out + "'";
}

bool printable(const std::string& text) {
  return std::none_of(text.begin(), text.end(),
                      [](unsigned char c) { return c < 0x20 || c == 0x7f; });
}

bool one_of(std::string_view text, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), text) != names.end();
}

// `--name`, `--name=V` or an abbreviation getopt_long takes for it (`--out` for `--output`).
bool long_abbrev(const std::string& word, std::string_view full) {
  if (word.size() < 3 || word.compare(0, 2, "--") != 0)
    return false;
  auto name = std::string_view{word}.substr(2, word.find('=') == std::string::npos
                                                   ? std::string::npos
                                                   : word.find('=') - 2);
  return !name.empty() && full.substr(0, name.size()) == name;
}

// Any short-option cluster (`-ro`) holding `option`, or a long option naming `long_name`.
bool has_option(const std::vector<std::string>& words, char option, std::string_view long_name) {
  for (size_t i = 1; i < words.size(); ++i) {
    const auto& w = words[i];
    if (w == "--")
      break;
    if (w.size() >= 2 && w[0] == '-' && w[1] != '-' && w.find(option, 1) != std::string::npos)
      return true;
    if (!long_name.empty() && long_abbrev(w, long_name))
      return true;
  }
  return false;
}

bool any_starts(const std::vector<std::string>& words,
                std::initializer_list<std::string_view> prefixes) {
  for (size_t i = 1; i < words.size(); ++i)
    for (auto prefix : prefixes)
      if (std::string_view{words[i]}.substr(0, prefix.size()) == prefix)
        return true;
  return false;
}

// git's subcommands that only read, with the options that make them write or run programs.
bool read_only_git(const std::vector<std::string>& words) {
  size_t i = 1;
  while (i < words.size() && (words[i] == "--no-pager" || words[i] == "-C"))
    i += words[i] == "-C" ? 2 : 1;
  if (i >= words.size())
    return true;
  const auto& sub = words[i];
  if (any_starts(words, {"--output", "-O", "--open-files-in-pager", "--ext-diff", "--textconv"}))
    return false;
  if (one_of(sub, {"status", "diff", "log", "show", "blame", "rev-parse", "ls-files", "shortlog",
                   "describe", "grep", "ls-tree", "cat-file", "rev-list", "reflog"}))
    return sub != "reflog" || i + 1 == words.size() || words[i + 1] == "show";
  std::vector<std::string> rest(words.begin() + static_cast<std::ptrdiff_t>(i), words.end());
  auto only = [&](std::initializer_list<std::string_view> options) {
    return std::all_of(rest.begin() + 1, rest.end(),
                       [&](const std::string& o) { return one_of(o, options); });
  };
  if (sub == "branch")
    return only({"-a", "-r", "-v", "-vv", "--all", "--remotes", "--list", "-l",
                 "--show-current", "--verbose"});
  if (sub == "remote")
    return only({"-v", "--verbose"});
  if (sub == "tag")
    return only({"-l", "--list"});
  return false;
}

} // namespace

bool read_only_command(const std::vector<std::string>& words) {
  if (words.empty())
    return true;
  const auto& program = words[0];
  if (one_of(program, {"ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "stat", "du", "df", "which", "type", "cut", "tr", "diff", "cmp",
                       "basename", "dirname", "realpath", "readlink", "uname", "id", "whoami",
                       "pwd", "echo", "true", "false", ":", "test", "[", "nl", "od", "hexdump",
                       "md5sum", "sha1sum", "sha256sum", "sha512sum", "cksum", "column", "jq",
                       "rev", "tac", "comm", "join", "paste", "fold", "fmt", "expand",
                       "unexpand", "strings", "seq", "nproc", "printenv", "uptime", "free", "ps",
                       "groups", "locale", "cd", "sleep", "find", "command", "lsof", "tty"}))
    return true;
  // Short options come bundled (`sort -ro f`) and long ones abbreviated (`--out=f`).
  if (program == "sort")
    return !has_option(words, 'o', "output") && !any_starts(words, {"--compress"});
  if (program == "rg")
    return !any_starts(words, {"--pre"});
  if (program == "tree")
    return !has_option(words, 'o', "");
  if (program == "file") // -C compiles the magic file it names into NAME.mgc
    return !has_option(words, 'C', "compile");
  if (program == "date")
    return !has_option(words, 's', "set");
  if (program == "printf")
    return !any_starts(words, {"-v"});
  if (program == "env" || program == "hostname")
    return words.size() == 1;
  if (program == "uniq") { // `uniq in out` writes out, `-` being the input
    size_t operands = 0;
    bool options = true;
    for (size_t i = 1; i < words.size(); ++i) {
      const auto& w = words[i];
      if (options && w == "--") {
        options = false;
      } else if (options && w.size() > 1 && w[0] == '-') {
        if (w == "-f" || w == "-s" || w == "-w")
          ++i; // its number
      } else {
        ++operands;
      }
    }
    return operands <= 1;
  }
  if (program == "git")
    return read_only_git(words);
  return false;
}

permission_decision permission_policy::shell_decision(const tool_spec& spec,
                                                      const nlohmann::json& input) const {
  auto parts = analysed(input, spec);
  std::vector<permission_decision> verdicts;
  for (auto& run : parts.commands)
    verdicts.push_back(judge_command(*this, spec, run));
  for (auto& write : parts.writes)
    verdicts.push_back(judge_write(*this, write));
  // A rule's refusal outranks plan mode's: it is what stops the work.
  for (auto cause : {denial_cause::refused, denial_cause::plan_mode})
    for (auto& verdict : verdicts)
      if (verdict.outcome == permission_outcome::deny && verdict.cause == cause)
        return verdict;
  // An ask rule's question outranks the mode's: a hook's "allow" lifts only the latter.
  for (bool rule : {true, false})
    for (auto& verdict : verdicts)
      if (verdict.outcome == permission_outcome::ask && verdict.from_rule == rule)
        return verdict;
  std::string reasons;
  for (auto& verdict : verdicts)
    if (reasons.find(verdict.reason) == std::string::npos)
      reasons += (reasons.empty() ? "" : "; ") + verdict.reason;
  return {permission_outcome::allow, reasons};
}

allow_suggestion permission_policy::always_rules(const tool_spec& spec,
                                                 const nlohmann::json& input) const {
  if (spec.rule_subject != "command")
    return {{always_rule(spec, input)}, {}};
  allow_suggestion suggestion;
  auto add = [&](permission_rule rule) {
    if (std::none_of(suggestion.rules.begin(), suggestion.rules.end(),
                     [&](const permission_rule& r) { return r.text == rule.text; }))
      suggestion.rules.push_back(std::move(rule));
  };
  auto cannot = [&](const std::string& what) {
    suggestion.unallowable += (suggestion.unallowable.empty() ? "" : "; ") + what;
  };
  auto parts = analysed(input, spec);
  for (auto& run : parts.commands) {
    if (judge_command(*this, spec, run).outcome == permission_outcome::allow)
      continue;
    if (!run.opaque.empty()) {
      cannot(code_span(run.text) + " runs code troupe cannot see (" + run.opaque + ")");
      continue;
    }
    for (auto& text : run.must_allow) {
      // A part already allowed (`cat` in `sudo cat f`) needs no rule of its own.
      auto allows = [&](const permission_rule& r) {
        return r.tool == spec.name && (!r.pattern || command_matches(*r.pattern, text, false));
      };
      if (std::any_of(rules.allow.begin(), rules.allow.end(), allows) ||
          std::any_of(session_allow.begin(), session_allow.end(), allows))
        continue;
      auto pattern = rule_for(text);
      if (!printable(pattern)) {
        cannot("the name of " + code_span(text) + " holds control characters");
        continue;
      }
      add({spec.name, pattern, spec.name + "(" + pattern + ")"});
    }
  }
  for (auto& write : parts.writes) {
    if (judge_write(*this, write).outcome == permission_outcome::allow)
      continue;
    if (write.opaque || !printable(write.path))
      cannot("a redirection to " + code_span(write.path) + " writes where troupe cannot see");
    else
      add(always_rule(write_spec(), {{"path", write.path}}));
  }
  return suggestion;
}

std::string permission_policy::allow_hint(const tool_spec& spec,
                                          const nlohmann::json& input) const {
  auto suggestion = always_rules(spec, input);
  std::string hint;
  if (!suggestion.rules.empty()) {
    hint = "allow it with";
    for (auto& rule : suggestion.rules)
      hint += " --allow " + shell_quoted(rule.text);
    hint += ", a settings rule or --permission-mode";
  }
  if (!suggestion.unallowable.empty())
    hint += (hint.empty() ? "" : "; ") + std::string{"no rule can allow this call, since "} +
            suggestion.unallowable +
            "; approve it when asked in an interactive run, or use --permission-mode bypass "
            "(the sandbox still holds)";
  if (hint.empty())
    hint = "allow it with a settings rule or --permission-mode";
  return hint;
}

} // namespace troupe
