#include "tools/permissions.hpp"

#include <algorithm>


#include "protocol/bounded_json.hpp"
#include "protocol/mcp.hpp"
#include "protocol/private_files.hpp"
#include "tools/claude_code_names.hpp"
#include "tools/path_match.hpp"
#include "tools/real_path.hpp"

namespace troupe {

// `*` matches any run of characters, `/` included: a command is not a path.
bool wildcard_match(std::string_view pattern, std::string_view text) {
  size_t p = 0, t = 0, star = std::string_view::npos, resume = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*')
    ++p;
  return p == pattern.size();
}

namespace {

// The subject of a path rule: the path relative to the workspace when inside it, else absolute.
std::string path_subject(const std::filesystem::path& path, const std::filesystem::path& root) {
  auto relative = path.lexically_relative(root);
  if (!relative.empty() && *relative.begin() != "..")
    return relative == "." ? "." : relative.generic_string();
  return path.generic_string();
}

// A path as the call names it and where it really leads (every symbolic link followed), with
// the workspace likewise: rules are matched against both, the boundary is drawn on the real one.
struct path_forms {
  std::filesystem::path given;
  std::filesystem::path real;
  std::filesystem::path real_root;
  /// False when the path could not be resolved (a link loop, an unreadable directory).
  bool resolved = true;
};

path_forms forms_of(const std::filesystem::path& given, const tool_context& ctx) {
  path_forms forms;
  forms.given = given;
  auto real = real_location(given);
  forms.resolved = static_cast<bool>(real);
  forms.real = real ? *real : given;
  auto root = real_location(ctx.cwd);
  forms.real_root = root ? *root : ctx.cwd;
  return forms;
}

// Only the real location counts: a path that cannot be resolved is not inside.
bool inside_workspace(const path_forms& forms) {
  return forms.resolved && lies_within(forms.real, forms.real_root);
}

enum class rule_use { deny, ask, allow };

// An absolute pattern whose fixed leading directories are reached through a link (a workspace
// or home opened by a linked name) is also matched where they really lead: paths are compared
// by their real location, so the rule's must be too.
bool absolute_pattern_matches(const std::string& pattern, const std::string& path) {
  if (glob_match(pattern, path))
    return true;
  auto special = pattern.find_first_of("*?[{\\");
  auto cut = pattern.rfind('/', special == std::string::npos ? pattern.size() - 1 : special);
  if (cut == std::string::npos || cut == 0)
    return false;
  auto prefix = real_location(pattern.substr(0, cut));
  if (!prefix || prefix->generic_string() == pattern.substr(0, cut))
    return false;
  return glob_match(prefix->generic_string() + pattern.substr(cut), path);
}

bool path_pattern_matches(std::string pattern, const std::filesystem::path& path,
                          const std::filesystem::path& root, const tool_context& ctx) {
  if (pattern.rfind("./", 0) == 0)
    pattern.erase(0, 2);
  if (pattern.rfind("~/", 0) == 0 && !ctx.home.empty())
    return absolute_pattern_matches((ctx.home / pattern.substr(2)).generic_string(),
                                    path.generic_string());
  if (!pattern.empty() && pattern[0] == '/')
    return absolute_pattern_matches(pattern, path.generic_string());
  return glob_match(pattern, path_subject(path, root));
}

// A deny or ask rule holds when the path as given or as it really is matches (a link cannot
// hide a denied file); an allow rule when the real path matches, or the given one does and
// really stays inside the workspace (a link cannot stretch an allow rule to somewhere else).
bool path_rule_matches(const std::string& pattern, const path_forms& forms,
                       const tool_context& ctx, rule_use use) {
  bool real = path_pattern_matches(pattern, forms.real, forms.real_root, ctx);
  if (real)
    return true;
  bool given = path_pattern_matches(pattern, forms.given, ctx.cwd, ctx);
  return given && (use != rule_use::allow || inside_workspace(forms));
}

std::string subject_of(const tool_spec& spec, const nlohmann::json& input) {
  if (spec.rule_subject.empty())
    return {};
  auto value = input.find(spec.rule_subject);
  if (value == input.end() || !value->is_string())
    return spec.rule_subject == "path" ? "." : "";
  return value->get<std::string>();
}

// A rule names a tool exactly, or, for an MCP server's tools (Claude Code's forms), all of one
// server's: mcp__fs and mcp__fs__* both cover mcp__fs__read_file.
bool names_tool(const std::string& rule_tool, const std::string& name) {
  if (rule_tool == name)
    return true;
  auto server = mcp_server_of(name);
  if (server.empty() || rule_tool.rfind("mcp__", 0) != 0)
    return false;
  // mcp__fs__*, mcp__fs__read_*, mcp__*: a pattern over the whole name.
  return rule_tool == "mcp__" + server ||
         (rule_tool.find('*') != std::string::npos && wildcard_match(rule_tool, name));
}

bool rule_matches(const permission_rule& rule, const tool_spec& spec, const nlohmann::json& input,
                  const tool_context& ctx, rule_use use) {
  if (!names_tool(rule.tool, spec.name))
    return false;
  if (!rule.pattern)
    return true;
  auto subject = subject_of(spec, input);
  if (spec.rule_subject == "path")
    return path_rule_matches(*rule.pattern, forms_of(resolve_path(ctx, subject), ctx), ctx, use);
  return wildcard_match(*rule.pattern, subject);
}

const permission_rule* first_match(const std::vector<permission_rule>& rules, const tool_spec& spec,
                                   const nlohmann::json& input, const tool_context& ctx,
                                   rule_use use) {
  for (auto& rule : rules)
    if (rule_matches(rule, spec, input, ctx, use))
      return &rule;
  return nullptr;
}

} // namespace

std::optional<permission_mode> parse_permission_mode(std::string_view text) {
  if (text == "default")
    return permission_mode::standard;
  if (text == "accept-edits" || text == "acceptEdits")
    return permission_mode::accept_edits;
  if (text == "plan")
    return permission_mode::plan;
  if (text == "bypass" || text == "bypassPermissions")
    return permission_mode::bypass;
  if (text == "dont-ask" || text == "dontAsk")
    return permission_mode::dont_ask;
  return std::nullopt;
}

const char* to_string(permission_mode mode) {
  switch (mode) {
    case permission_mode::accept_edits:
      return "accept-edits";
    case permission_mode::plan:
      return "plan";
    case permission_mode::bypass:
      return "bypass";
    case permission_mode::dont_ask:
      return "dont-ask";
    default:
      return "default";
  }
}

expected<permission_rule> parse_permission_rule(std::string_view text) {
  auto rule_text = trim(text);
  permission_rule rule;
  rule.text = std::string{rule_text};
  auto open = rule_text.find('(');
  if (open == std::string_view::npos) {
    rule.tool = std::string{rule_text};
  } else {
    if (rule_text.back() != ')' || open == 0)
      return failure{"invalid permission rule '" + rule.text +
                     "': expected Tool or Tool(pattern), e.g. shell(git *) or write(src/**)"};
    rule.tool = std::string{trim(rule_text.substr(0, open))};
    rule.pattern = std::string{rule_text.substr(open + 1, rule_text.size() - open - 2)};
    if (rule.pattern->empty())
      return failure{"invalid permission rule '" + rule.text + "': the pattern is empty"};
  }
  if (rule.tool.empty() ||
      rule.tool.find_first_of(" \t()") != std::string::npos)
    return failure{"invalid permission rule '" + rule.text + "': expected Tool or Tool(pattern)"};
  if (auto own = troupe_tool_name(rule.tool))
    rule.tool = *own;
  return rule;
}

expected<std::vector<permission_rule>> parse_permission_rules(std::string_view text) {
  std::vector<permission_rule> rules;
  for (auto& each : troupe_rule_texts(trim(text))) {
    auto rule = parse_permission_rule(each);
    if (!rule)
      return failure{"invalid permission rule '" + std::string{trim(text)} + "'" +
                     rule.error().substr(rule.error().find("':") + 1)};
    rule->text = std::string{trim(text)};
    rules.push_back(std::move(*rule));
  }
  return rules;
}

void permission_rules::add(const permission_rules& other) {
  allow.insert(allow.end(), other.allow.begin(), other.allow.end());
  ask.insert(ask.end(), other.ask.begin(), other.ask.end());
  deny.insert(deny.end(), other.deny.begin(), other.deny.end());
}

expected<nlohmann::json> read_settings_file(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec))
    return nlohmann::json::object();
  std::string text;
  if (!read_whole_file(file, text).empty())
    return failure{"cannot read settings file " + file.string()};
  auto json = parse_json_bounded(text);
  if (!json)
    return failure{"settings file " + file.string() + " is not a JSON object" +
                   (json.error() == invalid_json_message ? "" : " (" + json.error() + ")")};
  if (!json->is_object())
    return failure{"settings file " + file.string() + " is not a JSON object"};
  return std::move(*json);
}

expected<permission_rules> parse_permission_settings(const nlohmann::json& json,
                                                     const std::string& where) {
  permission_rules rules;
  auto permissions = json.find("permissions");
  if (permissions == json.end())
    return rules;
  if (!permissions->is_object())
    return failure{where + ": \"permissions\" must be an object"};
  for (auto [key, into] : {std::pair{"allow", &rules.allow}, std::pair{"ask", &rules.ask},
                           std::pair{"deny", &rules.deny}}) {
    auto list = permissions->find(key);
    if (list == permissions->end())
      continue;
    if (!list->is_array())
      return failure{where + ": permissions." + key + " must be an array of rules"};
    for (auto& item : *list) {
      auto parsed = item.is_string()
                      ? parse_permission_rules(item.get<std::string>())
                      : expected<std::vector<permission_rule>>{failure{"a rule must be a string"}};
      if (!parsed)
        return failure{where + ": " + parsed.error()};
      into->insert(into->end(), parsed->begin(), parsed->end());
    }
  }
  return rules;
}

expected<permission_rules> load_permission_rules(const std::filesystem::path& file) {
  auto settings = read_settings_file(file);
  if (!settings)
    return failure{settings.error()};
  return parse_permission_settings(*settings, "settings file " + file.string());
}

permission_decision permission_policy::can_use_tool(const tool_spec& spec,
                                                    const nlohmann::json& input) const {
  if (spec.rule_subject == "command")
    return shell_decision(spec, input);
  const auto& ctx = context;
  if (auto rule = first_match(rules.deny, spec, input, ctx, rule_use::deny))
    return {permission_outcome::deny, "denied by the rule " + rule->text, denial_cause::refused,
            true};
  if (mode == permission_mode::bypass)
    return {permission_outcome::allow, "bypass mode"};
  if (auto rule = first_match(session_allow, spec, input, ctx, rule_use::allow))
    return {permission_outcome::allow, "allowed for this session: " + rule->text};
  if (auto rule = first_match(rules.ask, spec, input, ctx, rule_use::ask))
    return {permission_outcome::ask, "the rule " + rule->text + " asks for approval",
            denial_cause::refused, true};
  if (auto rule = first_match(rules.allow, spec, input, ctx, rule_use::allow))
    return {permission_outcome::allow, "allowed by the rule " + rule->text};
  if (spec.read_only)
    return {permission_outcome::allow, "read-only"};
  if (mode == permission_mode::plan)
    return {permission_outcome::deny,
            "plan mode allows read-only tools only; present the plan instead of running " +
              spec.name,
            denial_cause::plan_mode};
  if (spec.writes_files) {
    auto path = resolve_path(ctx, subject_of(spec, input));
    auto forms = forms_of(path, ctx);
    if (!inside_workspace(forms))
      return {permission_outcome::ask,
              spec.name + " would write " + path.string() +
                (forms.real != path ? " (which leads to " + forms.real.string() + ")" : "") +
                ", outside the workspace"};
    if (mode == permission_mode::accept_edits)
      return {permission_outcome::allow, "accept-edits mode"};
    return {permission_outcome::ask, spec.name + " would change " + path.string()};
  }
  return {permission_outcome::ask, spec.name + " needs approval"};
}

permission_rule permission_policy::always_rule(const tool_spec& spec,
                                               const nlohmann::json& input) const {
  permission_rule rule;
  rule.tool = spec.name;
  auto subject = subject_of(spec, input);
  if (spec.rule_subject == "path" && !subject.empty()) {
    auto forms = forms_of(resolve_path(context, subject), context);
    if (forms.resolved && !inside_workspace(forms))
      subject = forms.real.string();
  }
  if (!subject.empty())
    rule.pattern = subject;
  rule.text = rule.pattern ? spec.name + "(" + *rule.pattern + ")" : spec.name;
  return rule;
}

std::string permission_policy::real_target(const tool_spec& spec,
                                           const nlohmann::json& input) const {
  if (spec.rule_subject != "path")
    return {};
  auto forms = forms_of(resolve_path(context, subject_of(spec, input)), context);
  return forms.resolved ? forms.real.string() : std::string{};
}

std::optional<std::string> permission_policy::read_denial(const std::filesystem::path& path) const {
  std::optional<path_forms> forms;
  for (auto& rule : rules.deny)
    if (rule.tool == "read" && rule.pattern) {
      if (!forms)
        forms = forms_of(path, context);
      if (path_rule_matches(*rule.pattern, *forms, context, rule_use::deny))
        return rule.text;
    }
  return std::nullopt;
}

bool permission_policy::removes_tool(std::string_view name) const {
  return std::any_of(rules.deny.begin(), rules.deny.end(),
                     [&](auto& rule) {
                       return !rule.pattern && names_tool(rule.tool, std::string{name});
                     });
}

} // namespace troupe
