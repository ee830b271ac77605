#include "orchestrator/cli.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <csignal>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <string_view>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include "actors/control_endpoint.hpp"
#include "actors/http_engine.hpp"
#include "actors/ids.hpp"
#include "actors/notification_queue.hpp"
#include "actors/runtime.hpp"
#include "actors/transcript.hpp"
#include "orchestrator/run_command.hpp"
#include "tools/tool_spec.hpp"

namespace troupe {

std::string_view embedded_team_script();
std::string_view embedded_writer_script();
std::string_view embedded_surveyor_script();
std::string_view embedded_scripter_script();

namespace {

constexpr int usage_error = 2;

/// The flags of `troupe run`, as typed.
struct run_flags {
  std::vector<std::string> prompt;
  std::string model;
  std::string max_steps;
  std::string cwd;
  std::string output_format = "text";
  std::string session_id;
  std::string tool_format;
  bool no_stream = false;
  bool include_partial_messages = false;
  int max_retries = 8;
  int stream_idle_timeout_s = 120;
  /// --idle-timeout as typed: the session's idle timeout with --wait-notifications, else the
  /// streaming one (its meaning before notifications existed).
  int idle_timeout_s = 0;
  bool wait_notifications = false;
  std::string max_agent_depth;
  std::string max_agents;
  bool let_agents_finish = false;
  std::string max_tool_output;
  std::string permission_mode;
  std::vector<std::string> allow;
  std::vector<std::string> deny;
  std::string settings_file;
  std::string context_window;
  std::string max_output_tokens;
};

int fail(const std::string& message) {
  std::fprintf(stderr, "troupe: %s\n", message.c_str());
  return usage_error;
}

std::string env_or(const char* name, std::string fallback = {}) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string{value} : fallback;
}

std::filesystem::path home_dir() { return env_or("HOME", "/tmp"); }

// The first executable bash on PATH, resolved once per run.
std::string find_bash() {
  auto path = env_or("PATH", "/usr/bin:/bin");
  for (size_t start = 0; start <= path.size();) {
    auto end = path.find(':', start);
    auto dir = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    auto candidate = (dir.empty() ? std::string{"."} : dir) + "/bash";
    if (::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    if (end == std::string::npos)
      break;
    start = end + 1;
  }
  return "/bin/bash";
}

std::filesystem::path troupe_home() {
  auto configured = env_or("TROUPE_HOME");
  return configured.empty() ? home_dir() / ".local/share/troupe"
                            : std::filesystem::path{configured};
}

const std::vector<std::string> log_levels = {"trace", "debug", "info", "warn",
                                              "error", "critical", "off"};

expected<bool> configure_logging(const std::string& log_file, const std::string& level) {
  auto name = level.empty() ? std::string{"warn"} : level;
  if (std::find(log_levels.begin(), log_levels.end(), name) == log_levels.end())
    return failure{"invalid log level '" + name + "': use trace, debug, info, warn, error, "
                   "critical or off"};
  std::shared_ptr<spdlog::logger> logger;
  try {
    logger = log_file.empty() ? spdlog::stderr_color_mt("troupe")
                              : spdlog::basic_logger_mt("troupe", log_file);
  } catch (const spdlog::spdlog_ex& e) {
    return failure{"cannot open log file " + log_file + ": " + e.what()};
  }
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(name));
  return true;
}

// Parses a flag's or variable's value as a whole number in [low, high], naming where it came
// from and what it counts when it is not one.
expected<long> parse_count(const std::string& text, const std::string& where, long low, long high,
                           const char* what) {
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || end == text.c_str() || *end != '\0' || errno != 0 || value < low ||
      value > high)
    return failure{"invalid " + where + " '" + text + "': expected a whole number of " + what +
                   " from " + std::to_string(low) + " to " + std::to_string(high)};
  return value;
}

// The flag when given, else the environment variable, else the default.
expected<long> count_setting(const std::string& flag_value, const char* flag, const char* variable,
                             long fallback, long low, long high, const char* what) {
  if (!flag_value.empty())
    return parse_count(flag_value, flag, low, high, what);
  if (auto text = env_or(variable); !text.empty())
    return parse_count(text, variable, low, high, what);
  return fallback;
}

bool valid_port(std::string_view port) {
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  auto number = std::stoi(std::string{port});
  return number >= 1 && number <= 65535;
}

// True for HOST or HOST:PORT, HOST a name, an IPv4 address or a bracketed IPv6 address.
bool valid_authority(std::string_view authority) {
  auto all_of = [](std::string_view text, auto allowed) {
    return std::all_of(text.begin(), text.end(),
                       [&](char c) { return allowed(static_cast<unsigned char>(c)); });
  };
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos || close == 1 ||
        !all_of(authority.substr(1, close - 1),
                [](unsigned char c) { return std::isxdigit(c) != 0 || c == ':' || c == '.'; }))
      return false;
    auto rest = authority.substr(close + 1);
    return rest.empty() || (rest.front() == ':' && valid_port(rest.substr(1)));
  }
  auto host = authority;
  if (auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    if (!valid_port(authority.substr(colon + 1)))
      return false;
  }
  return !host.empty() && all_of(host, [](unsigned char c) {
    return std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_';
  });
}

// Checks a base URL before any request: scheme http(s), a host, an optional port and path.
// (Checked here, not by libcurl, so that libcurl can load while the run starts.)
expected<std::string> check_base_url(const std::string& url, const char* source) {
  std::string_view rest = url;
  bool http = false;
  for (std::string_view scheme : {"http://", "https://"})
    if (rest.substr(0, scheme.size()) == scheme) {
      rest.remove_prefix(scheme.size());
      http = true;
    }
  auto authority = rest.substr(0, rest.find_first_of("/?#"));
  bool printable = std::all_of(url.begin(), url.end(), [](char c) {
    return static_cast<unsigned char>(c) > 0x20 && static_cast<unsigned char>(c) < 0x7f;
  });
  if (!http || !printable || authority.find('@') != std::string_view::npos ||
      !valid_authority(authority))
    return failure{std::string{"invalid "} + source + " '" + url +
                   "': expected http://HOST[:PORT][/PATH] or https://…"};
  return url;
}

std::string ollama_base_url(std::string host) {
  if (host.find("://") == std::string::npos)
    host = "http://" + host;
  auto path_start = host.find('/', host.find("://") + 3);
  if (path_start == std::string::npos)
    host += "/v1";
  return host;
}

const char* no_model_help =
  "no model configured: pass --model openai/MODEL (with OPENAI_API_KEY), anthropic/MODEL "
  "(with ANTHROPIC_API_KEY), ollama/MODEL or scripted:PATH, or set TROUPE_MODEL "
  "(`troupe demo` runs offline)";

// Resolves one model spec: the provider, its endpoint and key from the environment, and the
// tool format (the flag's, or the provider's default).
expected<model_choice> resolve_model_spec(const std::string& model, const run_flags& flags) {
  model_choice choice;
  constexpr std::string_view scripted = "scripted:";
  if (model.rfind(scripted, 0) == 0) {
    auto path = model.substr(scripted.size());
    if (path.empty())
      return failure{"--model scripted: needs a script path, e.g. --model scripted:replies.jsonl"};
    auto lines = load_script(path);
    if (!lines)
      return failure{lines.error()};
    choice.model_script = std::move(*lines);
    choice.format = flags.tool_format == "tool"  ? tool_format::tool
                    : flags.tool_format == "xml" ? tool_format::xml
                                                 : tool_format::markdown;
    return choice;
  }
  auto slash = model.find('/');
  auto provider = model.substr(0, slash);
  auto name = slash == std::string::npos ? std::string{} : model.substr(slash + 1);
  if (slash == std::string::npos || name.empty() ||
      (provider != "openai" && provider != "anthropic" && provider != "ollama"))
    return failure{"unknown model '" + model + "': use openai/MODEL, anthropic/MODEL, " +
                   "ollama/MODEL or scripted:PATH"};
  http_model_config http;
  http.provider.model = name;
  expected<std::string> base = std::string{};
  if (provider == "anthropic") {
    http.provider.kind = provider_kind::anthropic;
    http.provider.api_key = env_or("ANTHROPIC_API_KEY");
    if (http.provider.api_key.empty())
      return failure{"anthropic/" + name + " needs an API key: set ANTHROPIC_API_KEY"};
    base = check_base_url(env_or("ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
                          "ANTHROPIC_BASE_URL");
  } else if (provider == "openai") {
    http.provider.api_key = env_or("OPENAI_API_KEY");
    if (http.provider.api_key.empty())
      return failure{"openai/" + name + " needs an API key: set OPENAI_API_KEY"};
    base = check_base_url(env_or("OPENAI_BASE_URL", "https://api.openai.com/v1"),
                          "OPENAI_BASE_URL");
  } else {
    base = check_base_url(ollama_base_url(env_or("OLLAMA_HOST", "http://127.0.0.1:11434/v1")),
                          "OLLAMA_HOST");
  }
  if (!base)
    return failure{base.error()};
  http.provider.base_url = *base;
  http.provider.stream = !flags.no_stream;
  http.provider.format = flags.tool_format == "markdown" ? tool_format::markdown
                         : flags.tool_format == "xml"    ? tool_format::xml
                                                         : tool_format::tool;
  http.max_retries = flags.max_retries;
  http.idle_timeout_ms = flags.stream_idle_timeout_s * 1000;
  choice.format = http.provider.format;
  choice.http_model = std::move(http);
  return choice;
}

// Picks the provider and its settings from --model/TROUPE_MODEL and the environment.
expected<bool> resolve_model(const run_flags& flags, run_settings& settings) {
  auto model = flags.model.empty() ? env_or("TROUPE_MODEL") : flags.model;
  if (model.empty()) {
    // A key alone is enough: it names the provider, and each has a sensible default model.
    if (!env_or("ANTHROPIC_API_KEY").empty())
      model = "anthropic/claude-sonnet-4-5";
    else if (!env_or("OPENAI_API_KEY").empty())
      model = "openai/gpt-4.1";
    else
      return failure{no_model_help};
  }
  settings.model_name = model;
  auto choice = resolve_model_spec(model, flags);
  if (!choice)
    return failure{choice.error()};
  settings.model_script = std::move(choice->model_script);
  settings.http_model = std::move(choice->http_model);
  settings.format = choice->format;
  settings.resolve_model = [flags](const std::string& spec) {
    return resolve_model_spec(spec, flags);
  };
  return true;
}

std::string read_prompt(const std::vector<std::string>& words) {
  std::string prompt;
  for (auto& w : words)
    prompt += (prompt.empty() ? "" : " ") + w;
  if (!prompt.empty() || isatty(STDIN_FILENO))
    return prompt;
  prompt.assign(std::istreambuf_iterator<char>{std::cin}, std::istreambuf_iterator<char>{});
  while (!prompt.empty() && (prompt.back() == '\n' || prompt.back() == '\r'))
    prompt.pop_back();
  return prompt;
}

std::filesystem::path config_home() {
  auto xdg = env_or("XDG_CONFIG_HOME");
  return xdg.empty() ? home_dir() / ".config" : std::filesystem::path{xdg};
}

// The settings files in the order they apply: user, project, then --settings.
expected<std::vector<std::filesystem::path>> settings_files(const run_flags& flags,
                                                            const std::filesystem::path& workspace) {
  std::vector<std::filesystem::path> files = {config_home() / "troupe/settings.json",
                                              workspace / ".troupe/settings.json"};
  if (!flags.settings_file.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(flags.settings_file, ec))
      return failure{"--settings " + flags.settings_file + ": no such file"};
    files.emplace_back(flags.settings_file);
  }
  return files;
}

// The context window and output size: the model's row of the built-in table, then the settings
// files ("contextWindow", "maxOutputTokens"), then the environment, then the flags.
expected<context_budget> resolve_budget(const run_flags& flags, const std::string& model,
                                        const std::filesystem::path& workspace) {
  context_budget budget;
  budget.limits = limits_for_model(model);
  auto files = settings_files(flags, workspace);
  if (!files)
    return failure{files.error()};
  struct limit {
    const char* key;
    int64_t* into;
    long low;
    long high;
  };
  const limit limits[] = {{"contextWindow", &budget.limits.context_window, 1000, 100000000},
                          {"maxOutputTokens", &budget.limits.max_output_tokens, 16, 10000000}};
  for (auto& file : *files) {
    auto json = read_settings_file(file);
    if (!json)
      return failure{json.error()};
    for (auto& l : limits)
      if (auto value = json->find(l.key); value != json->end()) {
        if (!value->is_number_integer() || value->get<long>() < l.low ||
            value->get<long>() > l.high)
          return failure{"settings file " + file.string() + ": \"" + l.key +
                         "\" must be a whole number of tokens from " + std::to_string(l.low) +
                         " to " + std::to_string(l.high)};
        *l.into = value->get<int64_t>();
      }
  }
  auto window = count_setting(flags.context_window, "--context-window", "TROUPE_CONTEXT_WINDOW",
                              static_cast<long>(budget.limits.context_window), 1000, 100000000,
                              "tokens");
  auto output = count_setting(flags.max_output_tokens, "--max-output-tokens",
                              "TROUPE_MAX_OUTPUT_TOKENS",
                              static_cast<long>(budget.limits.max_output_tokens), 16, 10000000,
                              "tokens");
  for (auto* checked : {&window, &output})
    if (!*checked)
      return failure{checked->error()};
  budget.limits.context_window = *window;
  budget.limits.max_output_tokens = *output;
  return budget;
}

// The permission policy from the settings files (user, then project, then --settings) and the
// flags, which come last.
expected<permission_policy> resolve_permissions(const run_flags& flags,
                                                const std::filesystem::path& workspace) {
  permission_policy policy;
  if (!flags.permission_mode.empty()) {
    auto mode = parse_permission_mode(flags.permission_mode);
    if (!mode)
      return failure{"invalid --permission-mode '" + flags.permission_mode +
                     "': expected default, accept-edits, plan or bypass"};
    policy.mode = *mode;
  }
  auto files = settings_files(flags, workspace);
  if (!files)
    return failure{files.error()};
  for (auto& file : *files) {
    auto rules = load_permission_rules(file);
    if (!rules)
      return failure{rules.error()};
    policy.rules.add(*rules);
  }
  for (auto [texts, into] : {std::pair{&flags.allow, &policy.rules.allow},
                             std::pair{&flags.deny, &policy.rules.deny}})
    for (auto& text : *texts) {
      auto rule = parse_permission_rule(text);
      if (!rule)
        return failure{rule.error()};
      into->push_back(*rule);
    }
  policy.context.cwd = workspace;
  policy.context.home = home_dir();
  return policy;
}

// Turns flags and environment into a checked run, or a one-line error.
expected<run_settings> resolve_run(const run_flags& flags) {
  run_settings settings;
  settings.render.format =
    flags.output_format == "stream-json" ? output_format::stream_json : output_format::text;
  settings.render.include_partial_messages = flags.include_partial_messages;

  auto max_steps = count_setting(flags.max_steps, "--max-steps", "TROUPE_MAX_STEPS", 0, 1,
                                 1000000, "steps");
  auto parallel = count_setting("", "", "TROUPE_MAX_TOOL_CONCURRENCY", 10, 1, 10, "calls");
  auto tool_output = count_setting(flags.max_tool_output, "--max-tool-output",
                                   "TROUPE_MAX_TOOL_OUTPUT", 30000, 1000, 10000000, "bytes");
  for (auto* checked : {&max_steps, &parallel, &tool_output})
    if (!*checked)
      return failure{checked->error()};
  settings.max_steps = static_cast<int32_t>(*max_steps);
  settings.max_parallel_tools = static_cast<size_t>(*parallel);
  settings.max_tool_output = static_cast<size_t>(*tool_output);

  std::error_code ec;
  settings.cwd = flags.cwd.empty() ? std::filesystem::current_path(ec)
                                   : std::filesystem::absolute(flags.cwd, ec);
  if (ec || !std::filesystem::is_directory(settings.cwd, ec))
    return failure{"--cwd " + flags.cwd + ": no such directory"};
  settings.cwd = std::filesystem::canonical(settings.cwd, ec);

  if (auto model = resolve_model(flags, settings); !model)
    return failure{model.error()};
  if (settings.http_model)
    http_engine::warm_up(); // libcurl loads while the rest is checked and the run starts

  auto permissions = resolve_permissions(flags, settings.cwd);
  if (!permissions)
    return failure{permissions.error()};
  auto budget = resolve_budget(flags, settings.model_name, settings.cwd);
  if (!budget)
    return failure{budget.error()};
  settings.budget = *budget;
  auto depth = count_setting(flags.max_agent_depth, "--max-agent-depth", "TROUPE_MAX_AGENT_DEPTH",
                             3, 0, 10, "levels");
  auto agents = count_setting(flags.max_agents, "--max-agents", "TROUPE_MAX_AGENTS", 20, 1, 1000,
                              "agents");
  for (auto* checked : {&depth, &agents})
    if (!*checked)
      return failure{checked->error()};
  settings.max_agent_depth = static_cast<int32_t>(*depth);
  settings.max_agents = static_cast<size_t>(*agents);
  settings.let_agents_finish = flags.let_agents_finish;
  settings.wait_notifications = flags.wait_notifications;
  if (flags.wait_notifications)
    settings.idle_timeout = std::chrono::seconds{flags.idle_timeout_s};
  settings.permissions = std::move(*permissions);
  settings.ask_on_terminal = isatty(STDIN_FILENO) != 0 && isatty(STDERR_FILENO) != 0;

  settings.prompt = read_prompt(flags.prompt);
  if (settings.prompt.empty())
    return failure{"no prompt: give it as arguments (troupe run \"fix the tests\") or on stdin"};

  settings.home = home_dir();
  settings.shell_program = find_bash();
  settings.troupe_home = troupe_home();
  settings.session_id = flags.session_id.empty() ? new_session_id() : flags.session_id;
  if (!is_valid_session_id(settings.session_id))
    return failure{"invalid --session-id '" + settings.session_id +
                   "': use letters, digits, '.', '_' and '-'"};
  auto transcript = settings.troupe_home / "sessions" / settings.session_id / "transcript.jsonl";
  if (std::filesystem::exists(transcript, ec)) {
    auto loaded = load_transcript(transcript);
    if (!loaded)
      return failure{loaded.error()};
    if (!loaded->repair_note.empty())
      spdlog::warn("{}", loaded->repair_note);
    settings.history = std::move(loaded->messages);
    // The transcript is the source of truth; the state only carries counters over.
    auto state_path = transcript.parent_path() / "state.json";
    if (std::filesystem::exists(state_path, ec)) {
      if (auto state = read_loop_state(state_path))
        settings.resumed_state = *state;
      else
        spdlog::warn("{}; counters restart from zero", state.error());
    }
  }
  return settings;
}

constexpr int runtime_error_exit = 1;

int fail_at_runtime(const std::string& message) {
  std::fprintf(stderr, "troupe: %s\n", message.c_str());
  return runtime_error_exit;
}

std::filesystem::path session_dir_of(const std::string& session_id) {
  return troupe_home() / "sessions" / session_id;
}

// An id that names an existing session: never a silently created directory.
expected<std::filesystem::path> existing_session(const std::string& session_id) {
  if (!is_valid_session_id(session_id))
    return failure{"invalid session id '" + session_id + "'"};
  auto dir = session_dir_of(session_id);
  std::error_code ec;
  if (!std::filesystem::exists(dir / "transcript.jsonl", ec))
    return failure{"unknown session '" + session_id + "' (no " + dir.string() +
                   "/transcript.jsonl)"};
  return dir;
}

int64_t epoch_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

// A client actor system: the middleman, no more threads than needed.
struct client_system {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  client_system() {
    configure_actor_system(cfg);
    cfg.set("scheduler.max-threads", size_t{1});
    sys = std::make_unique<caf::actor_system>(cfg);
  }
};

int run_notify(const std::string& session_id, const std::string& text, bool urgent) {
  auto dir = existing_session(session_id);
  if (!dir)
    return fail_at_runtime(dir.error());
  if (text.empty())
    return fail(std::string{"no message: give it as arguments or on stdin"});
  task_notification n;
  n.id = "ntf_" + random_hex(12);
  n.source = "external";
  n.text = text;
  n.urgent = urgent;
  n.sent_at_us = epoch_us();
  // Durable first: once this returns the message survives anything.
  if (auto queued = append_notification(*dir / "queue.jsonl", n); !queued)
    return fail_at_runtime(queued.error());
  client_system client;
  auto answer = send_control(*client.sys, *dir, urgent ? "urgent" : "poke", "");
  if (answer && answer->rfind("error", 0) != 0 && answer->rfind("refused", 0) != 0)
    std::printf("notification %s delivered to the running session %s\n", n.id.c_str(),
                session_id.c_str());
  else
    std::printf("notification %s queued for session %s (%s); it is read when the session runs "
                "again\n",
                n.id.c_str(), session_id.c_str(),
                answer ? answer->c_str() : answer.error().c_str());
  return 0;
}

int run_remote_command(const std::string& session_id, const std::string& command,
                       const std::string& arg) {
  auto dir = existing_session(session_id);
  if (!dir)
    return fail_at_runtime(dir.error());
  client_system client;
  auto answer = send_control(*client.sys, *dir, command, arg);
  if (!answer)
    return fail_at_runtime("session " + session_id + " is not running: " + answer.error());
  if (answer->rfind("error", 0) == 0 || answer->rfind("refused", 0) == 0)
    return fail_at_runtime(*answer);
  std::printf("%s\n", answer->c_str());
  return 0;
}

// Finds the session that launched an agent: <home>/sessions/<id>[/agents/<id>…]/agents/<agent>.
int run_background(const std::string& agent_id) {
  if (!is_valid_session_id(agent_id))
    return fail_at_runtime("invalid agent id '" + agent_id + "'");
  std::error_code ec;
  auto sessions = troupe_home() / "sessions";
  for (auto it = std::filesystem::recursive_directory_iterator(sessions, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (ec)
      break;
    const auto& path = it->path();
    if (path.filename() != agent_id || path.parent_path().filename() != "agents")
      continue;
    // The top-level session holds the control endpoint; the parent is named in the path.
    auto parent_dir = path.parent_path().parent_path();
    auto top = parent_dir;
    while (top.parent_path().filename() == "agents")
      top = top.parent_path().parent_path();
    client_system client;
    auto answer = send_control(*client.sys, top, "background",
                               parent_dir == top ? agent_id
                                                 : std::filesystem::relative(path, top).string());
    if (!answer)
      return fail_at_runtime("the session that launched " + agent_id +
                             " is not running: " + answer.error());
    if (answer->rfind("error", 0) == 0 || answer->rfind("refused", 0) == 0)
      return fail_at_runtime(*answer);
    std::printf("%s\n", answer->c_str());
    return 0;
  }
  return fail_at_runtime("unknown agent '" + agent_id + "' (no sessions/…/agents/" + agent_id +
                         " under " + sessions.string() + ")");
}

int run_demo(const std::string& format) {
  char workspace_template[] = "/tmp/troupe-demo-XXXXXX";
  if (mkdtemp(workspace_template) == nullptr)
    return fail("cannot create a temporary directory for the demo");
  // The session's files live beside the workspace, so the agent starts in an empty directory.
  std::filesystem::path root{workspace_template};
  auto workspace = root / "workspace";
  std::error_code ec;
  if (!std::filesystem::create_directory(workspace, ec))
    return fail("cannot create " + workspace.string() + ": " + ec.message());
  auto lines = parse_script(embedded_team_script(), "the bundled demo script");
  if (!lines)
    return fail(lines.error());
  // The subagents' scripts go beside the workspace; the parent names them in its task calls.
  auto agents = root / "agents";
  std::filesystem::create_directory(agents, ec);
  for (auto [name, text] : {std::pair{"writer.jsonl", embedded_writer_script()},
                            std::pair{"surveyor.jsonl", embedded_surveyor_script()},
                            std::pair{"scripter.jsonl", embedded_scripter_script()}})
    if (!write_whole_file(agents / name, std::string{text}).empty())
      return fail("cannot write " + (agents / name).string());

  run_settings settings;
  settings.prompt = "Write a word-count script, try it on two sample files and tell me which "
                    "file has more words. Use helpers for the parts that can run at once.";
  settings.model_name = "scripted:demo";
  settings.resolve_model = [](const std::string& spec) {
    return resolve_model_spec(spec, run_flags{});
  };
  settings.model_script = std::move(*lines);
  settings.cwd = workspace;
  settings.home = home_dir();
  settings.shell_program = find_bash();
  settings.troupe_home = root / "home";
  settings.session_id = new_session_id();
  // The demo's workspace is a fresh temporary directory: its edits and commands may run.
  settings.permissions.mode = permission_mode::accept_edits;
  settings.permissions.rules.allow.push_back(*parse_permission_rule("shell"));
  settings.permissions.context.cwd = workspace;
  settings.permissions.context.home = settings.home;
  settings.render.format =
    format == "stream-json" ? output_format::stream_json : output_format::text;
  if (settings.render.format == output_format::text)
    std::printf("troupe demo: an offline agent team (scripted models, real shells, three "
                "subagents, a notification from another process) in %s\n",
                workspace.c_str());
  auto transcript = settings.troupe_home / "sessions" / settings.session_id / "transcript.jsonl";
  int code = execute_run(std::move(settings), stdout);
  if (format != "stream-json")
    std::printf("transcript: %s\n", transcript.c_str());
  return code;
}

} // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{"troupe: an asynchronous multi-agent runtime for LLM coding agents", "troupe"};
  app.require_subcommand(1);
  app.fallthrough(); // --log-file/--log-level may also follow the subcommand
  app.set_version_flag("--version", "troupe 0.1.0");
  std::string log_file;
  std::string log_level = env_or("TROUPE_LOG");
  app.add_option("--log-file", log_file, "write diagnostics to this file instead of stderr");
  app.add_option("--log-level", log_level, "trace, debug, info, warn (default), error, off");

  run_flags flags;
  auto* run = app.add_subcommand("run", "run an agent non-interactively until it is done");
  run->add_option("prompt", flags.prompt, "the task (read from stdin when omitted)");
  run->add_option("--model,-m", flags.model,
                  "openai/MODEL, anthropic/MODEL, ollama/MODEL or scripted:PATH "
                  "(default: $TROUPE_MODEL)");
  run->add_option("--max-steps", flags.max_steps,
                  "most steps per turn (default: $TROUPE_MAX_STEPS, else no cap)");
  run->add_option("--cwd", flags.cwd, "workspace directory (default: the current one)");
  run->add_option("--output-format", flags.output_format, "text or stream-json")
    ->check(CLI::IsMember({"text", "stream-json"}));
  run->add_option("--session-id", flags.session_id,
                  "session id; an existing session's transcript is continued");
  run->add_option("--tool-format", flags.tool_format,
                  "tool (native function calling; default for API models), markdown "
                  "(fenced blocks; default for scripted) or xml (<tool-use> elements)")
    ->check(CLI::IsMember({"tool", "markdown", "xml"}));
  run->add_flag("--no-stream", flags.no_stream, "ask the API for whole replies, not streams");
  run->add_flag("--include-partial-messages", flags.include_partial_messages,
                "stream-json: add stream_event lines with text deltas");
  run->add_option("--max-retries", flags.max_retries,
                  "retries of a failed API request (429, 5xx, connection errors)")
    ->check(CLI::Range(0, 100));
  run->add_option("--idle-timeout", flags.idle_timeout_s,
                  "with --wait-notifications: end the run (completed) after this many seconds "
                  "without any; otherwise the same as --stream-idle-timeout")
    ->check(CLI::Range(1, 86400));
  run->add_option("--stream-idle-timeout", flags.stream_idle_timeout_s,
                  "seconds a streaming reply may stay silent before it fails (default 120)")
    ->check(CLI::Range(1, 86400));
  run->add_flag("--wait-notifications", flags.wait_notifications,
                "when the work is done, stay alive for task notifications (troupe notify) "
                "instead of ending");
  run->add_option("--max-agent-depth", flags.max_agent_depth,
                  "deepest nesting of subagents (default 3)")
    ->type_name("N");
  run->add_option("--max-agents", flags.max_agents,
                  "most subagents one agent runs at once (default 20)")
    ->type_name("N");
  run->add_flag("--let-agents-finish", flags.let_agents_finish,
                "when the run ends, let background subagents finish instead of stopping them");
  run->add_option("--max-tool-output", flags.max_tool_output,
                  "bytes of a tool result the model sees; longer ones keep head and tail, "
                  "the whole output saved in the session directory")
    ->type_name("BYTES");
  run->add_option("--permission-mode", flags.permission_mode,
                  "default (ask for shell and writes), accept-edits, plan (read-only tools), "
                  "bypass (everything)")
    ->type_name("MODE");
  // One rule per flag, repeatable, so `--allow shell PROMPT` leaves PROMPT the prompt.
  run->add_option("--allow", flags.allow, "allow a tool or Tool(pattern), e.g. 'shell(git *)'")
    ->type_name("RULE")
    ->expected(1)
    ->allow_extra_args(false)
    ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  run->add_option("--deny", flags.deny, "deny a tool or Tool(pattern); a bare tool is removed")
    ->type_name("RULE")
    ->expected(1)
    ->allow_extra_args(false)
    ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  run->add_option("--settings", flags.settings_file, "a settings JSON file read after the others")
    ->type_name("FILE");
  run->add_option("--context-window", flags.context_window,
                  "the model's context window in tokens (default: the built-in table, "
                  "$TROUPE_CONTEXT_WINDOW or contextWindow in settings); the conversation is "
                  "compacted before a request would overflow it")
    ->type_name("TOKENS");
  run->add_option("--max-output-tokens", flags.max_output_tokens,
                  "tokens a reply may take (default: the built-in table, "
                  "$TROUPE_MAX_OUTPUT_TOKENS or maxOutputTokens in settings)")
    ->type_name("TOKENS");

  std::string target_id;
  std::vector<std::string> notify_words;
  bool urgent = false;
  auto* notify = app.add_subcommand(
    "notify", "send a task notification to a session (queued durably; a running session "
              "gets it at once)");
  notify->add_option("session-id", target_id, "the session")->required();
  notify->add_option("text", notify_words, "the message (read from stdin when omitted)");
  notify->add_flag("--urgent", urgent, "interrupt the current step and start a turn with it");
  auto* interrupt = app.add_subcommand("interrupt", "interrupt the step a running session is in");
  interrupt->add_option("session-id", target_id, "the session")->required();
  auto* background = app.add_subcommand(
    "background", "move a foreground subagent to the background (its parent goes on)");
  background->add_option("agent-id", target_id, "the subagent")->required();

  std::string demo_format = "text";
  auto* demo = app.add_subcommand("demo", "run an offline agent on a bundled script");
  demo->add_option("--output-format", demo_format, "text or stream-json")
    ->check(CLI::IsMember({"text", "stream-json"}));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(std::string{e.what()} + " (see troupe --help)");
  }
  if (!flags.wait_notifications && flags.idle_timeout_s > 0)
    flags.stream_idle_timeout_s = flags.idle_timeout_s;
  if (auto logging = configure_logging(log_file, log_level); !logging)
    return fail(logging.error());
  // A reader that goes away (`troupe run … | head`) is an EPIPE to handle, not a fatal signal.
  std::signal(SIGPIPE, SIG_IGN);

  if (*demo)
    return run_demo(demo_format);
  if (*notify)
    return run_notify(target_id, read_prompt(notify_words), urgent);
  if (*interrupt)
    return run_remote_command(target_id, "interrupt", "");
  if (*background)
    return run_background(target_id);
  auto settings = resolve_run(flags);
  if (!settings)
    return fail(settings.error());
  return execute_run(std::move(*settings), stdout);
}

} // namespace troupe
