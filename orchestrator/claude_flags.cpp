#include "orchestrator/claude_flags.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include <CLI/CLI.hpp>

#include "context/token_budget.hpp"
#include "orchestrator/run_command.hpp"
#include "orchestrator/run_flags.hpp"
#include "protocol/bounded_json.hpp"
#include "protocol/private_files.hpp"
#include "tools/claude_code_names.hpp"
#include "tools/tool_spec.hpp"

namespace troupe {

namespace {

// How many words a Claude Code flag takes after it (commander's rules): `one` takes the next
// word whatever it is, `optional` the next unless it starts with '-', `many` every word up to
// one that starts with '-'.
enum class arity : uint8_t { none, one, optional, many };

enum class treatment : uint8_t {
  list,   ///< troupe has the flag, one value per use: each word becomes `--flag=WORD`
  ignore, ///< accepted and dropped: it tunes what troupe has no counterpart for
  refuse, ///< dropping it would lose its meaning: an error
};

struct claude_flag {
  std::string_view name;
  arity takes;
  treatment does;
  /// list: troupe's spelling; refuse: why.
  std::string_view detail;
};

// The Claude Code flags rewritten here (the rest are troupe's own CLI11 options). README's
// "Claude Code compatibility" lists the same, with the flags troupe honours.
constexpr std::array<claude_flag, 44> claude_flags = {{
  {"--allowedTools", arity::many, treatment::list, "--allowed-tools"},
  {"--allowed-tools", arity::many, treatment::list, "--allowed-tools"},
  {"--disallowedTools", arity::many, treatment::list, "--disallowed-tools"},
  {"--disallowed-tools", arity::many, treatment::list, "--disallowed-tools"},
  {"--tools", arity::many, treatment::list, "--tools"},
  {"--mcp-config", arity::many, treatment::list, "--mcp-config"},
  {"--max-thinking-tokens", arity::one, treatment::ignore, ""},
  {"--thinking", arity::one, treatment::ignore, ""},
  {"--thinking-display", arity::one, treatment::ignore, ""},
  {"--effort", arity::one, treatment::ignore, ""},
  {"--betas", arity::many, treatment::ignore, ""},
  {"--debug", arity::optional, treatment::ignore, ""},
  {"-d", arity::optional, treatment::ignore, ""},
  {"--debug-file", arity::one, treatment::ignore, ""},
  {"--debug-to-stderr", arity::none, treatment::ignore, ""},
  {"--mcp-debug", arity::none, treatment::ignore, ""},
  {"--include-hook-events", arity::none, treatment::ignore, ""},
  {"--permission-prompts", arity::one, treatment::ignore, ""},
  {"--channels", arity::one, treatment::ignore, ""},
  {"--agent", arity::one, treatment::ignore, ""},
  {"--task-budget", arity::one, treatment::ignore, ""},
  {"--plugin-dir", arity::one, treatment::ignore, ""},
  {"--plugin-dir-no-mcp", arity::one, treatment::ignore, ""},
  {"--project-config-root", arity::one, treatment::ignore, ""},
  {"--session-mirror", arity::none, treatment::ignore, ""},
  {"--ide", arity::none, treatment::ignore, ""},
  {"--replay-user-messages", arity::none, treatment::ignore, ""},
  {"--chrome", arity::none, treatment::ignore, ""},
  {"--no-chrome", arity::none, treatment::ignore, ""},
  {"--json-schema", arity::one, treatment::refuse,
   "structured output (a result that follows a JSON schema) is not supported"},
  {"--resume-session-at", arity::one, treatment::refuse,
   "resuming at an earlier message is not supported (--resume continues a session from its "
   "end; --fork-session copies it whole)"},
  {"--resume-drops-turn", arity::one, treatment::refuse,
   "resuming at an earlier message is not supported"},
  {"--agents", arity::one, treatment::refuse,
   "subagents defined in JSON are not supported (the task tool launches troupe's own)"},
  {"--managed-settings", arity::one, treatment::refuse,
   "managed settings are not read; give their permissions with --settings"},
  {"--managed-settings-in-initialize", arity::none, treatment::refuse,
   "managed settings are not read; give their permissions with --settings"},
  {"--initialize-fields", arity::one, treatment::refuse,
   "settings and disallowed tools are not taken from the initialize request; give them as "
   "--settings and --disallowedTools"},
  {"--disable-slash-commands", arity::none, treatment::refuse,
   "a prompt that starts with / is always a command in troupe"},
  {"--worktree", arity::optional, treatment::refuse,
   "running in a new git worktree is not supported (--cwd DIR runs in one you made)"},
  {"-w", arity::optional, treatment::refuse,
   "running in a new git worktree is not supported (--cwd DIR runs in one you made)"},
  {"--tmux", arity::none, treatment::refuse, "tmux sessions are not supported"},
  {"--from-pr", arity::optional, treatment::refuse, "resuming a pull request's session is not supported"},
  {"--remote", arity::one, treatment::refuse, "remote sessions are not supported"},
  {"--teleport", arity::optional, treatment::refuse, "remote sessions are not supported"},
  {"--file", arity::many, treatment::refuse, "file resources are not supported"},
}};

const claude_flag* find_claude_flag(std::string_view name) {
  for (auto& flag : claude_flags)
    if (flag.name == name)
      return &flag;
  return nullptr;
}

// commander's test for a word that is an option, not a value.
bool looks_like_option(const std::string& word) { return word.size() > 1 && word[0] == '-'; }

// troupe's global options, which may come before the subcommand.
bool is_global_option(std::string_view name) {
  return name == "--log-file" || name == "--log-level";
}

bool is_top_level_request(std::string_view word) {
  return word == "--help" || word == "-h" || word == "--version" || word == "-v";
}

// One flag as the next `--name=VALUE` token (or `--name ""` for an empty value, which CLI11
// would otherwise take for a missing one and fill from the next word).
void push_valued(std::vector<std::string>& out, std::string_view name, const std::string& value) {
  if (value.empty()) {
    out.emplace_back(name);
    out.emplace_back();
  } else {
    out.push_back(std::string{name} + "=" + value);
  }
}

// Rewrites the words after `run` or `chat`.
expected<bool> rewrite_agent_words(const std::vector<std::string>& args, size_t i,
                                   const std::string& subcommand,
                                   const option_takes_value& takes_value, rewritten_argv& out) {
  while (i < args.size()) {
    const auto& word = args[i];
    if (word == "--") {
      out.args.insert(out.args.end(), args.begin() + static_cast<long>(i), args.end());
      return true;
    }
    if (!looks_like_option(word)) {
      out.args.push_back(word);
      ++i;
      continue;
    }
    auto equals = word.rfind("--", 0) == 0 ? word.find('=') : std::string::npos;
    auto name = word.substr(0, equals);
    bool inline_value = equals != std::string::npos;
    auto value = inline_value ? word.substr(equals + 1) : std::string{};
    const auto* flag = find_claude_flag(name);
    if (!flag) {
      if (inline_value && value.empty())
        push_valued(out.args, name, value); // `--setting-sources=`: an empty value, not none
      else
        out.args.push_back(word);
      ++i;
      // The value of one of troupe's options is copied as it is, whatever it looks like.
      if (!inline_value && i < args.size() && takes_value(subcommand, name))
        out.args.push_back(args[i++]);
      continue;
    }
    ++i;
    if (flag->does == treatment::refuse)
      return failure{std::string{flag->name} + " is not supported: " + std::string{flag->detail}};
    std::vector<std::string> values;
    if (inline_value) {
      values.push_back(value);
    } else if (flag->takes == arity::one) {
      if (i >= args.size())
        return failure{std::string{flag->name} + " needs a value"};
      values.push_back(args[i++]);
    } else if (flag->takes == arity::optional) {
      if (i < args.size() && !looks_like_option(args[i]) && args[i] != "--")
        values.push_back(args[i++]);
    } else if (flag->takes == arity::many) {
      while (i < args.size() && !looks_like_option(args[i]) && args[i] != "--")
        values.push_back(args[i++]);
      if (values.empty())
        return failure{std::string{flag->name} + " needs at least one value"};
    }
    if (flag->does == treatment::list) {
      for (auto& v : values)
        push_valued(out.args, flag->detail, v);
    } else if (std::find(out.ignored.begin(), out.ignored.end(), flag->name) == out.ignored.end()) {
      out.ignored.emplace_back(flag->name);
    }
  }
  return true;
}

} // namespace

std::vector<std::string> split_tool_list(std::string_view text) {
  std::vector<std::string> entries;
  std::string current;
  int depth = 0;
  for (char c : text) {
    if (c == '(') {
      ++depth;
    } else if (c == ')' && depth > 0) {
      --depth;
    } else if (depth == 0 && (c == ',' || std::isspace(static_cast<unsigned char>(c)))) {
      if (!current.empty())
        entries.push_back(std::move(current));
      current.clear();
      continue;
    }
    current += c;
  }
  if (!current.empty())
    entries.push_back(std::move(current));
  return entries;
}

expected<rewritten_argv> rewrite_claude_argv(const std::vector<std::string>& args,
                                             const std::vector<std::string>& subcommands,
                                             bool stdin_is_terminal,
                                             const option_takes_value& takes_value) {
  rewritten_argv out;
  size_t i = 0;
  // --log-file and --log-level may come first, before the subcommand (or the prompt).
  while (i < args.size() && args[i].rfind("--", 0) == 0) {
    auto equals = args[i].find('=');
    if (!is_global_option(args[i].substr(0, equals)))
      break;
    out.args.push_back(args[i++]);
    if (equals == std::string::npos && i < args.size())
      out.args.push_back(args[i++]);
  }
  if (i == args.size()) {
    out.args.emplace_back(stdin_is_terminal ? "chat" : "run");
    return out;
  }
  if (is_top_level_request(args[i])) {
    out.args.insert(out.args.end(), args.begin() + static_cast<long>(i), args.end());
    return out;
  }
  std::string subcommand = "run";
  if (std::find(subcommands.begin(), subcommands.end(), args[i]) != subcommands.end())
    subcommand = args[i++];
  else
    out.claude_form = true;
  out.args.push_back(subcommand);
  if (subcommand != "run" && subcommand != "chat") {
    out.args.insert(out.args.end(), args.begin() + static_cast<long>(i), args.end());
    return out;
  }
  if (auto rewritten = rewrite_agent_words(args, i, subcommand, takes_value, out); !rewritten)
    return failure{rewritten.error()};
  return out;
}

expected<setting_sources> parse_setting_sources(std::string_view text) {
  setting_sources sources{false, false, false};
  if (trim(text).empty())
    return sources; // none: only --settings and the flags
  size_t start = 0;
  for (;;) {
    auto comma = text.find(',', start);
    auto name = trim(text.substr(start, comma == std::string_view::npos ? text.npos
                                                                            : comma - start));
    if (name == "user")
      sources.user = true;
    else if (name == "project")
      sources.project = true;
    else if (name == "local")
      sources.local = true;
    else
      return failure{"invalid --setting-sources '" + std::string{text} +
                     "': expected user, project and local, separated by commas"};
    if (comma == std::string_view::npos)
      return sources;
    start = comma + 1;
  }
}

bool is_inline_json(std::string_view value) {
  auto first = value.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && value[first] == '{';
}

expected<nlohmann::json> json_object_argument(const std::string& value, const std::string& flag) {
  std::string text = value;
  std::string where = flag + " JSON";
  if (!is_inline_json(value)) {
    where = flag + " " + value;
    if (value.empty())
      return failure{flag + " needs a file or a JSON object"};
    if (auto problem = read_whole_file(value, text); !problem.empty())
      return failure{where + ": " + problem};
  }
  auto json = parse_json_bounded(text);
  if (!json)
    return failure{where + " is not a JSON object" +
                   (json.error() == invalid_json_message ? "" : " (" + json.error() + ")")};
  if (!json->is_object())
    return failure{where + " is not a JSON object"};
  return std::move(*json);
}

expected<nlohmann::json> merge_mcp_configs(const std::vector<std::string>& values) {
  auto servers = nlohmann::json::object();
  for (auto& value : values) {
    auto config = json_object_argument(value, "--mcp-config");
    if (!config)
      return failure{config.error()};
    auto where = is_inline_json(value) ? std::string{"--mcp-config JSON"}
                                       : "--mcp-config " + value;
    auto found = config->find("mcpServers");
    if (found == config->end() || !found->is_object())
      return failure{where + ": expected {\"mcpServers\": {NAME: {…}, …}}"};
    for (auto& [name, server] : found->items()) {
      if (!server.is_object())
        return failure{where + ": mcpServers." + name + " must be an object"};
      servers[name] = server;
    }
  }
  return nlohmann::json{{"mcpServers", std::move(servers)}};
}

expected<std::vector<std::string>> offered_tool_names(const std::vector<std::string>& values,
                                                      const std::vector<std::string>& builtin) {
  std::vector<std::string> names;
  for (auto& value : values)
    for (auto& entry : split_tool_list(value)) {
      if (entry == "default")
        return builtin;
      auto own = troupe_rule_texts(entry);
      for (auto& name : own) {
        if (std::find(builtin.begin(), builtin.end(), name) == builtin.end()) {
          std::string known;
          for (auto& tool : builtin)
            known += (known.empty() ? "" : ", ") + claude_tool_name(tool);
          return failure{"unknown tool '" + entry + "' in --tools (known: " + known +
                         "; or default, or \"\" for none)"};
        }
        if (std::find(names.begin(), names.end(), name) == names.end())
          names.push_back(name);
      }
    }
  return names;
}

// Claude Code's spellings of what troupe does (its list flags come here rewritten by
// rewrite_claude_argv, one value per use; the flags troupe ignores never arrive).
void add_claude_code_flags(CLI::App& command, run_flags& flags, bool headless) {
  if (headless) {
    command.add_flag("-p,--print", flags.print,
                     "Claude Code's headless mode: what `troupe run` always is (the prompt is "
                     "the words, or stdin)");
    command.add_option("--fallback-model", flags.fallback_model,
                       "the model to go on with when the main one stays overloaded (5xx, 429) "
                       "after its retries")
      ->type_name("MODEL");
    command.add_flag("--no-session-persistence", flags.no_session_persistence,
                     "remove the session's directory when the run ends (troupe ls never lists "
                     "it)");
    command.add_option("--max-budget-usd", flags.max_budget_usd,
                       "end the run (max_budget) once its cost reaches this many US dollars")
      ->type_name("USD");
    command.add_flag("--await-initialize", flags.await_initialize,
                     "stream-json input: the client sends an initialize request first");
  }
  command.add_option("--max-turns", flags.max_turns, "Claude Code's name for --max-steps")
    ->type_name("N");
  add_repeated_option(command, "--allowed-tools,--allowedTools", flags.allowed_tools,
                      "Claude Code's allow list: rules separated by commas or blanks, e.g. "
                      "'Bash(git *),Read' (takes every following word up to the next flag)",
                      "RULES");
  add_repeated_option(command, "--disallowed-tools,--disallowedTools", flags.disallowed_tools,
                      "Claude Code's deny list, spelled as --allowed-tools", "RULES");
  add_repeated_option(command, "--tools", flags.tools,
                      "the built-in tools offered: default (all), \"\" (none) or a list, e.g. "
                      "'Bash,Read,Edit'",
                      "TOOLS");
  command.get_option("--tools")->each([&flags](const std::string&) { flags.tools_given = true; });
  command
    .add_option("--system-prompt", flags.system_prompt,
                "instructions in place of troupe's own (tool-format instructions stay)")
    ->type_name("TEXT")
    ->each([&flags](const std::string&) { flags.system_prompt_given = true; });
  command.add_option("--system-prompt-file", flags.system_prompt_file,
                     "--system-prompt read from a file")
    ->type_name("FILE");
  command.add_option("--append-system-prompt", flags.append_system_prompt,
                     "instructions added after troupe's own (the main agent's, not subagents')")
    ->type_name("TEXT");
  command.add_option("--append-system-prompt-file", flags.append_system_prompt_file,
                     "--append-system-prompt read from a file")
    ->type_name("FILE");
  command.add_flag("--dangerously-skip-permissions", flags.skip_permissions,
                   "Claude Code's name for --permission-mode bypass");
  command.add_flag("--allow-dangerously-skip-permissions", flags.allow_skip_permissions,
                   "accepted (Claude Code: lets a session switch to bypass later)");
  command
    .add_option("--setting-sources", flags.setting_sources,
                "the settings files read: user, project and local, separated by commas "
                "(default all)")
    ->type_name("SOURCES")
    ->each([&flags](const std::string&) { flags.setting_sources_given = true; });
  add_repeated_option(command, "--mcp-config", flags.mcp_configs,
                      "MCP servers ({\"mcpServers\": {…}}), a file or JSON; repeatable",
                      "FILE|JSON");
  command.add_flag("--strict-mcp-config", flags.strict_mcp_config,
                   "use only --mcp-config's servers, none from settings or .mcp.json");
}


namespace {

// A text given inline (`text_given`) or in a file; nullopt for neither.
expected<std::optional<std::string>> text_or_file(const std::string& text, bool text_given,
                                                  const std::string& file, const char* text_flag,
                                                  const char* file_flag) {
  if (text_given && !file.empty())
    return failure{std::string{text_flag} + " and " + file_flag + " cannot be combined"};
  if (!file.empty()) {
    std::string content;
    if (auto problem = read_whole_file(file, content); !problem.empty())
      return failure{std::string{file_flag} + " " + file + ": " + problem};
    return std::optional<std::string>{std::move(content)};
  }
  if (text_given)
    return std::optional<std::string>{text};
  return std::optional<std::string>{};
}

} // namespace

expected<bool> resolve_claude_code_flags(const run_flags& flags, run_settings& settings) {
  auto instructions = text_or_file(flags.system_prompt, flags.system_prompt_given,
                                   flags.system_prompt_file, "--system-prompt",
                                   "--system-prompt-file");
  if (!instructions)
    return failure{instructions.error()};
  if (*instructions)
    settings.custom_instructions = std::move(**instructions);
  auto appended = text_or_file(flags.append_system_prompt, !flags.append_system_prompt.empty(),
                               flags.append_system_prompt_file, "--append-system-prompt",
                               "--append-system-prompt-file");
  if (!appended)
    return failure{appended.error()};
  if (*appended && !(*appended)->empty())
    settings.extra_system = settings.extra_system.empty()
                              ? std::move(**appended)
                              : settings.extra_system + "\n\n" + **appended;

  if (!flags.max_budget_usd.empty()) {
    const char* text = flags.max_budget_usd.c_str();
    char* end = nullptr;
    double usd = std::strtod(text, &end);
    if (end == text || *end != '\0' || !(usd > 0) || !std::isfinite(usd) ||
        std::isspace(static_cast<unsigned char>(*text)))
      return failure{"invalid --max-budget-usd '" + flags.max_budget_usd +
                     "': expected a positive amount of US dollars, e.g. 0.50"};
    for (const auto* model : {&settings.model_name, &settings.fallback_model})
      if (!model->empty() && !prices_for_model(*model))
        return failure{"--max-budget-usd: the price of " + *model +
                       " is not known, so what the run costs cannot be counted"};
    settings.max_cost_usd = usd;
  }

  // A run that continues a session would take it away with it: only a new one (or a fork's
  // copy) can go unkept.
  if (flags.no_session_persistence && !settings.created_session_dir)
    return failure{"--no-session-persistence would remove session " + settings.session_id +
                   ", which exists already: continue it without the flag, or add "
                   "--fork-session for a copy that is not kept"};
  settings.info.persist = !flags.no_session_persistence;

  if (!flags.mcp_configs.empty()) {
    auto merged = merge_mcp_configs(flags.mcp_configs);
    if (!merged)
      return failure{merged.error()};
    settings.info.mcp_config = merged->dump();
  }
  if (flags.strict_mcp_config)
    settings.info.strict_mcp_config = true;
  return true;
}

} // namespace troupe
