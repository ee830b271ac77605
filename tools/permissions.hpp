#pragma once
// can_use_tool: the one place that decides whether a tool call may run — from the mode, the
// rules of the settings files and flags, and where the call would write.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/expected.hpp"
#include "protocol/permission.hpp"
#include "tools/tool_spec.hpp"

namespace troupe {

enum class permission_mode : uint8_t {
  standard,     ///< `default`: read-only tools run; shell and writes are asked for
  accept_edits, ///< writes inside the workspace run too; shell is asked for
  plan,         ///< read-only tools only; everything else is refused
  bypass,       ///< everything runs (deny rules still hold)
  dont_ask,     ///< `dont-ask` (Claude Code's dontAsk): as `default`, but what would be asked
                ///< is refused, whoever could be asked
};

/// Parses `default`, `accept-edits`, `plan`, `bypass` or `dont-ask`, and Claude Code's
/// `acceptEdits`, `bypassPermissions` and `dontAsk`.
std::optional<permission_mode> parse_permission_mode(std::string_view text);
const char* to_string(permission_mode mode);

/// `Tool` or `Tool(pattern)`: for shell the pattern is matched against each command the line
/// runs, normalised (`*` is any text; `X *` and `X:*` also match the bare `X`), for path tools against the path (a glob; relative patterns are relative to the
/// workspace, `/…` absolute, `~/…` in the home directory).
struct permission_rule {
  std::string tool;
  std::optional<std::string> pattern;
  std::string text; ///< as written, for messages
};

/// Parses one rule, or says what is wrong with it. Claude Code's tool names are troupe's
/// ("Bash(git *)" is shell's rule; its text stays as written).
expected<permission_rule> parse_permission_rule(std::string_view text);

/// Parses one rule as written in a settings file or a flag: the rules it stands for, one but
/// for Claude Code's `Edit(…)`, which covers edit, patch and write.
expected<std::vector<permission_rule>> parse_permission_rules(std::string_view text);

struct permission_rules {
  std::vector<permission_rule> allow;
  std::vector<permission_rule> ask;
  std::vector<permission_rule> deny;

  /// Appends the other set's rules after these.
  void add(const permission_rules& other);
};

/// Reads a settings file: a JSON object. A missing file is an empty object; an unreadable one,
/// or one that is not a JSON object, is an error naming the file.
expected<nlohmann::json> read_settings_file(const std::filesystem::path& file);

/// Reads `permissions.allow|ask|deny` of a settings object; `where` names it in errors
/// ("settings file PATH").
expected<permission_rules> parse_permission_settings(const nlohmann::json& settings,
                                                     const std::string& where);

/// Reads `permissions.allow|ask|deny` from a settings JSON file. A missing file is no rules;
/// an unreadable or malformed one is an error naming the file.
expected<permission_rules> load_permission_rules(const std::filesystem::path& file);

enum class permission_outcome : uint8_t { allow, deny, ask };

struct permission_decision {
  permission_outcome outcome = permission_outcome::allow;
  /// Why, in words the model (deny) or the user (ask) can act on.
  std::string reason;
  /// For a denial: plan mode's refusal (the model is to present its plan) or a refusal.
  denial_cause cause = denial_cause::refused;
  /// A deny or ask rule decided, not the mode's default: a hook's "allow" does not lift it.
  bool from_rule = false;
};

/// What allows a call from now on: the rules an "always" answer adds and a headless refusal
/// suggests.
struct allow_suggestion {
  /// Rules that together allow the call: one per command not yet allowed, by its program (and
  /// subcommand: `shell(git status *)`), and `write(PATH)` per file a redirection writes.
  std::vector<permission_rule> rules;
  /// What no rule can allow (code troupe cannot see), and why; empty when the rules suffice.
  std::string unallowable;
};

/// True when `text` matches `pattern`, `*` standing for any text (`/` included).
bool wildcard_match(std::string_view pattern, std::string_view text);

/// True for a command plan mode runs: one on the built-in list of commands that only read
/// (`ls`, `grep`, `git status`, …), without the options that make it write. `words` are the
/// command's, its program by base name.
bool read_only_command(const std::vector<std::string>& words);

struct permission_policy {
  permission_mode mode = permission_mode::standard;
  permission_rules rules;
  /// Rules the user added by answering "always" during this session.
  std::vector<permission_rule> session_allow;
  /// Where paths resolve and what counts as inside: the workspace and the home directory.
  tool_context context;

  /// The one decision point for every call. Deny rules are checked first, then the session's
  /// "always" answers, then ask, then allow (the first match of each list wins), then the
  /// mode's default.
  permission_decision can_use_tool(const tool_spec& spec, const nlohmann::json& input) const;

  /// The one rule naming this call's path (or subject): a path that leads outside the
  /// workspace through a link is named where it really leads, since only that form allows it.
  /// For a shell line use always_rules.
  permission_rule always_rule(const tool_spec& spec, const nlohmann::json& input) const;

  /// The rules that allow this call (what an "always" answer adds): for a shell line one per
  /// command not already allowed, never the whole line, plus `write(PATH)` for a file a
  /// redirection writes; what no rule can allow is said in `unallowable`.
  allow_suggestion always_rules(const tool_spec& spec, const nlohmann::json& input) const;

  /// How to allow this call when nobody can be asked: "allow it with --allow '…' …", or why no
  /// rule can and what to do instead.
  std::string allow_hint(const tool_spec& spec, const nlohmann::json& input) const;

  /// can_use_tool for a shell line: each command it runs and each file its redirections write
  /// judged on its own; any denied part denies, else any asked part asks, else it is allowed.
  permission_decision shell_decision(const tool_spec& spec, const nlohmann::json& input) const;

  /// Where the call's path really leads now, as can_use_tool judges it; empty for tools without
  /// a path or a path that cannot be resolved.
  std::string real_target(const tool_spec& spec, const nlohmann::json& input) const;

  /// The text of the `read(…)` deny rule that forbids reading `path` (absolute), matched
  /// against the path as given and where it really leads; nullopt when none does.
  std::optional<std::string> read_denial(const std::filesystem::path& path) const;

  /// True when a deny rule names the tool bare: it is not offered to the model at all.
  bool removes_tool(std::string_view name) const;
};

} // namespace troupe
