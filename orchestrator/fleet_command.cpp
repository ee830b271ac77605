#include "orchestrator/fleet_command.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <iostream>
#include <iterator>
#include <mutex>
#include <set>

#include <CLI/CLI.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "actors/disk_io.hpp"
#include "actors/fleet_dispatcher.hpp"
#include "actors/runtime.hpp"
#include "context/context_window.hpp"
#include "orchestrator/claude_flags.hpp"
#include "orchestrator/environment.hpp"
#include "orchestrator/model_flags.hpp"
#include "orchestrator/output_format.hpp"
#include "orchestrator/run_command.hpp"
#include "orchestrator/run_settings_files.hpp"
#include "orchestrator/signals.hpp"
#include "protocol/private_files.hpp"
#include "store/fleet_results.hpp"
#include "store/fleet_tasks.hpp"
#include "store/ids.hpp"
#include "store/session_catalog.hpp"
#include "store/session_lock.hpp"
#include "tools/process_reaper.hpp"

namespace troupe {

namespace {

constexpr long default_concurrency = 16;
/// A task's shell idle this long is stopped: a fleet's thousand agents keep no thousand bashes
/// while they wait for their models.
constexpr long default_shell_idle_stop_s = 30;
constexpr long most_concurrency = 100000;
/// A progress line this often on a terminal, and this often in a log.
constexpr std::chrono::milliseconds terminal_progress_every{500};
constexpr std::chrono::milliseconds plain_progress_every{5000};
/// The prompt a task's session gets when a rerun finds it cut off with nothing left to answer.
constexpr const char* resume_prompt =
  "The run was cut off before the task was done. Continue with the task where you left off.";

std::string dump(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A fleet named by its results file: a rerun with the same --out is the same fleet.
std::string fleet_id_for_out(const std::filesystem::path& out) {
  std::string readable;
  for (unsigned char c : out.stem().string().substr(0, 40))
    readable += std::isalnum(c) || c == '-' || c == '_' ? static_cast<char>(c) : '_';
  return (readable.empty() ? std::string{"fleet"} : readable) + "-" + stable_hash_hex(out.string()).substr(0, 10);
}

// Ten thousand agents hold a transcript each while they run, and their tools' pipes: the soft
// limit (often 1024) is raised to the hard one. Children inherit it. Returns the limit now.
rlim_t raise_open_file_limit() {
  struct rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0)
    return 1024;
  if (limit.rlim_cur < limit.rlim_max) {
    auto soft = limit.rlim_cur;
    limit.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &limit) == 0)
      spdlog::info("open file limit raised from {} to {}", soft, limit.rlim_max);
    else
      limit.rlim_cur = soft;
  }
  return std::min<rlim_t>(limit.rlim_cur, rlim_t{1} << 24);
}

// The results file as one path whatever its spelling (./r.jsonl, a//r.jsonl, a symlink): the
// fleet named after it is the same fleet.
std::filesystem::path real_out(const std::string& out) {
  std::error_code ec;
  auto absolute = std::filesystem::absolute(out, ec);
  // A symlink to a file not made yet: its target, which weakly_canonical leaves unresolved.
  for (int hops = 0; hops < 40 && std::filesystem::is_symlink(absolute, ec); ++hops) {
    auto target = std::filesystem::read_symlink(absolute, ec);
    if (ec)
      break;
    absolute = target.is_absolute() ? target : absolute.parent_path() / target;
  }
  auto real = std::filesystem::weakly_canonical(absolute, ec);
  return ec ? absolute.lexically_normal() : real;
}

// Excel's "CSV UTF-8" (and some editors' JSONL) starts with one; the format is guessed after.
std::string without_byte_order_mark(std::string text) {
  return text.rfind("\xEF\xBB\xBF", 0) == 0 ? text.substr(3) : text;
}

expected<std::string> read_tasks_text(const std::string& source) {
  if (source == "-") {
    std::string text{std::istreambuf_iterator<char>{std::cin}, std::istreambuf_iterator<char>{}};
    if (std::cin.bad())
      return failure{"cannot read the tasks from stdin"};
    return without_byte_order_mark(std::move(text));
  }
  std::error_code ec;
  if (std::filesystem::is_directory(source, ec))
    return failure{"tasks file: " + source + " is a directory"};
  // Not only regular files: a pipe (`troupe fleet <(…)`) is read the same way.
  std::ifstream in{source, std::ios::binary};
  if (!in)
    return failure{"tasks file: cannot read " + source + ": " +
                   (std::filesystem::exists(source, ec) ? "permission denied" : "no such file")};
  std::string text{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
  if (in.bad())
    return failure{"tasks file: cannot read " + source};
  return without_byte_order_mark(std::move(text));
}

std::string format_count(double n) {
  char text[32];
  if (n >= 1e6)
    std::snprintf(text, sizeof text, "%.1fM", n / 1e6);
  else if (n >= 1e4)
    std::snprintf(text, sizeof text, "%.1fk", n / 1e3);
  else
    std::snprintf(text, sizeof text, "%.0f", n);
  return text;
}

std::string format_duration(double seconds) {
  char text[32];
  if (seconds >= 3600)
    std::snprintf(text, sizeof text, "%dh%02dm", static_cast<int>(seconds / 3600),
                  static_cast<int>(std::fmod(seconds, 3600) / 60));
  else if (seconds >= 60)
    std::snprintf(text, sizeof text, "%dm%02ds", static_cast<int>(seconds / 60),
                  static_cast<int>(std::fmod(seconds, 60)));
  else
    std::snprintf(text, sizeof text, "%.0fs", seconds);
  return text;
}

// "fleet F: 40/100 done (3 failed) · 10 running · 50 queued · 12.3k tokens · $0.0420 · 2.1/s
// · ETA 24s"
std::string progress_line(const std::string& fleet_id, const fleet_progress& p) {
  auto done = p.completed + p.failed + p.budget;
  auto tokens = p.usage.input_tokens + p.usage.output_tokens + p.usage.cache_read_tokens +
                p.usage.cache_write_tokens;
  auto line = "fleet " + fleet_id + ": " + std::to_string(done) + "/" + std::to_string(p.total) +
              " done (" + std::to_string(p.failed) + " failed";
  if (p.budget > 0)
    line += ", " + std::to_string(p.budget) + " over budget";
  line += ") · " + std::to_string(p.running) + " running · " + std::to_string(p.queued) +
          " queued · " + format_count(static_cast<double>(tokens)) + " tokens · " +
          format_cost(p.cost_usd, p.cost_known);
  double seconds = static_cast<double>(p.elapsed_ms) / 1000.0;
  if (seconds > 0 && p.ended_here > 0) {
    double rate = static_cast<double>(p.ended_here) / seconds;
    char text[32];
    std::snprintf(text, sizeof text, "%.1f/s", rate);
    line += std::string{" · "} + text;
    if (p.running + p.queued > 0 && !p.stopping)
      line += " · ETA " + format_duration(static_cast<double>(p.running + p.queued) / rate);
  }
  if (p.stopping)
    line += " · stopping (Ctrl+C again stops at once)";
  else if (p.budget_spent)
    line += " · budget spent: no new task starts";
  return line;
}

nlohmann::json progress_json(const std::string& fleet_id, const fleet_progress& p) {
  return {{"fleet_id", fleet_id},     {"total", p.total},       {"completed", p.completed},
          {"failed", p.failed},       {"budget", p.budget},     {"running", p.running},
          {"queued", p.queued},       {"usage", p.usage},       {"elapsed_ms", p.elapsed_ms},
          {"cost_usd", p.cost_known ? nlohmann::json(p.cost_usd) : nlohmann::json(nullptr)},
          {"stopping", p.stopping},   {"budget_spent", p.budget_spent},
          {"left", p.left}};
}

// The text of the last assistant message of a transcript (the answer of a run).
std::string last_answer(const session_paths& session) {
  auto loaded = load_transcript(session.transcript(), transcript_access::reader);
  if (!loaded)
    return {};
  for (auto it = loaded->messages.rbegin(); it != loaded->messages.rend(); ++it)
    if (it->role == role::assistant)
      return it->content;
  return {};
}

// A task whose session ended before its result line was written (a kill between the two): its
// line from what the session wrote, so that nothing that finished runs again.
std::optional<std::string> settled_line(const fleet_paths& fleet, const fleet_task& task) {
  auto session = fleet.task_session(task_session_id(fleet.id(), task.id));
  if (!holds_session(session))
    return std::nullopt;
  auto stored = read_session(session);
  auto state = stored.info.state;
  // Only an end that running again would repeat: an error (the model's, or no descriptor left),
  // an unknown state (no session.json yet) or an interrupt is resumed instead.
  if (!stored.unreadable.empty() ||
      (state != "running" && state != "completed" && state != "max_turns" &&
       state != "permission_blocked"))
    return std::nullopt;
  if (state == "running") {
    // Killed after its last reply was written but before its end was: a reply that asked for
    // no tool ended the task, which must not run again.
    auto loaded = load_transcript(session.transcript(), transcript_access::reader);
    if (!loaded)
      return std::nullopt;
    auto last = std::find_if(loaded->messages.rbegin(), loaded->messages.rend(),
                             [](const message& m) { return !is_bookkeeping(m); });
    if (last == loaded->messages.rend() || last->role != role::assistant ||
        !last->tool_calls.empty() || awaits_answer(*last))
      return std::nullopt;
    // Waiting for background subagents is no end: their news would have started a turn.
    for (auto& agent : agents_of(session))
      if (agent.state == "running")
        return std::nullopt;
    state = "completed";
  }
  nlohmann::json line = {{"id", task.id},
                         {"session_id", session.id()},
                         {"terminal_reason", state},
                         {"result", last_answer(session)},
                         {"num_turns", stored.info.turns},
                         {"num_steps", stored.info.steps},
                         {"usage", stored.info.usage},
                         {"cost_usd", stored.info.cost_known ? nlohmann::json(stored.info.cost_usd)
                                                             : nlohmann::json(nullptr)},
                         {"duration_ms", nullptr},
                         {"recovered", true}};
  // session.json keeps the end's reason, not its message.
  if (state != "completed")
    line["error"] = state + " (recovered from the task's session, which does not keep the "
                            "message: troupe show " + session.id() + ")";
  if (!task.metadata.empty())
    line["metadata"] = nlohmann::json::parse(task.metadata, nullptr, false);
  return dump(line);
}

// Why a task cannot run now: `troupe run --resume` runs its session (and holds its lock).
std::string task_busy(const fleet_paths& fleet, const fleet_task& task) {
  auto session = fleet.task_session(task_session_id(fleet.id(), task.id));
  if (lock_held(session.lock()))
    return "session " + session.id() + " is running in another process (troupe run --resume?)";
  return {};
}

// Builds and spawns one task's agent from the fleet's checked settings.
struct task_launcher {
  std::shared_ptr<const run_settings> base;
  run_flags flags;
  fleet_paths fleet;
  std::shared_ptr<agent_commons> commons;
  /// Policies by workspace and extra allow rules: the settings files are read once per pair.
  std::map<std::string, permission_policy> policies;

  expected<permission_policy> policy_for(const fleet_task& task,
                                         const std::filesystem::path& cwd) {
    if (task.allow.empty() && cwd == base->cwd)
      return base->permissions;
    std::string key = cwd.string();
    for (auto& rule : task.allow)
      key += '\n' + rule;
    if (auto known = policies.find(key); known != policies.end())
      return known->second;
    auto with_rules = flags;
    with_rules.allow.insert(with_rules.allow.end(), task.allow.begin(), task.allow.end());
    auto policy = resolve_permissions(with_rules, cwd);
    if (!policy)
      return failure{policy.error()};
    policies.emplace(key, *policy);
    return *policy;
  }

  /// Sandboxes by workspace: a task's own cwd may have settings of its own.
  std::map<std::string, sandbox_settings> sandboxes;

  expected<sandbox_settings> sandbox_for(const std::filesystem::path& cwd,
                                         const permission_policy& permissions) {
    if (cwd == base->cwd)
      return base->sandbox;
    if (auto known = sandboxes.find(cwd.string()); known != sandboxes.end())
      return known->second;
    auto sandbox = resolve_sandbox(flags, cwd, permissions.mode == permission_mode::bypass);
    if (!sandbox)
      return failure{sandbox.error()};
    sandboxes.emplace(cwd.string(), *sandbox);
    return *sandbox;
  }

  /// A workspace's project files (instructions, subagent types), or why they cannot be used:
  /// read once per directory for the whole fleet, not once per task.
  struct project_files {
    std::shared_ptr<const project_instructions> instructions;
    std::shared_ptr<const agent_types> types;
    std::string error;
  };
  std::map<std::string, project_files> projects;

  expected<bool> project_files_for(run_settings& settings) {
    if (settings.cwd == base->cwd)
      return true; // the fleet's own, read when it started
    auto [known, fresh] = projects.try_emplace(settings.cwd.string());
    if (fresh) {
      auto loaded = load_project_files(settings);
      known->second = {settings.instructions, settings.subagent_types,
                       loaded ? std::string{} : loaded.error()};
    }
    if (!known->second.error.empty())
      return failure{known->second.error};
    settings.instructions = known->second.instructions;
    settings.subagent_types = known->second.types;
    return true;
  }

  expected<fleet_launch> operator()(caf::actor_system& sys, const fleet_task& task) {
    run_settings settings = *base;
    settings.commons = commons;
    settings.session_id = task_session_id(fleet.id(), task.id);
    if (!task.cwd.empty()) {
      std::error_code ec;
      auto cwd = std::filesystem::path{task.cwd};
      if (cwd.is_relative())
        cwd = base->cwd / cwd;
      if (!std::filesystem::is_directory(cwd, ec))
        return failure{"cwd " + task.cwd + ": no such directory"};
      settings.cwd = std::filesystem::canonical(cwd, ec);
    }
    if (!task.model.empty()) {
      auto spec = anchored_model_spec(task.model, settings.cwd);
      auto choice = base->resolve_model(spec);
      if (!choice)
        return failure{"model " + task.model + ": " + choice.error()};
      settings.model_name = spec;
      settings.model_script = std::move(choice->model_script);
      settings.http_model = std::move(choice->http_model);
      settings.format = choice->format;
      if (auto budget = base->resolve_budget(spec))
        settings.budget = *budget;
      else
        return failure{budget.error()};
    }
    if (task.max_steps > 0)
      settings.max_steps = task.max_steps;
    settings.extra_system = task.system;
    if (auto files = project_files_for(settings); !files)
      return failure{files.error()};
    auto policy = policy_for(task, settings.cwd);
    if (!policy)
      return failure{policy.error()};
    auto sandbox = sandbox_for(settings.cwd, *policy);
    if (!sandbox)
      return failure{sandbox.error()};
    settings.sandbox = std::move(*sandbox);
    settings.permissions = std::move(*policy);

    auto session = fleet.task_session(settings.session_id);
    settings.session_dir = session.dir();
    // What fails here for want of descriptors or disk may pass: no result, a rerun retries.
    // Anything else (a transcript with a bad line, say) is the task's result, for the user.
    auto not_now = [](std::string why) -> expected<fleet_launch> {
      for (int passing : {EMFILE, ENFILE, ENOSPC, EDQUOT})
        if (why.find(std::strerror(passing)) != std::string::npos) {
          fleet_launch later;
          later.not_now = std::move(why);
          return later;
        }
      return failure{why};
    };
    if (auto problem = make_private_dirs(session.dir()); !problem.empty())
      return not_now(problem);
    settings.info.first_prompt = task.prompt.substr(0, 200);
    if (holds_session(session)) {
      // Cut off by a kill or a Ctrl+C: the transcript goes on where it stopped.
      auto loaded = load_session(session, transcript_access::owner);
      if (!loaded)
        return not_now(loaded.error());
      warn_of_load_problems(*loaded);
      settings.history = std::move(loaded->history);
      settings.resumed_state = loaded->state;
      settings.info = read_session(session).info;
      auto last = std::find_if(settings.history.rbegin(), settings.history.rend(),
                               [](const message& m) { return !is_bookkeeping(m); });
      bool unanswered = last != settings.history.rend() && awaits_answer(*last);
      // Cut off before its prompt was logged (only start-up's bookkeeping is there): the task
      // starts; an unanswered last message is answered; otherwise it is told to go on.
      bool prompted = std::any_of(settings.history.begin(), settings.history.end(),
                                  [](const message& m) {
                                    return m.role == role::user &&
                                           m.origin == message_origin::prompt;
                                  });
      settings.prompt = !prompted   ? task.prompt
                        : unanswered ? std::string{}
                                     : std::string{resume_prompt};
    } else {
      settings.prompt = task.prompt;
    }
    auto launched = launch_agent(sys, settings, {});
    if (!launched)
      return not_now(launched.error());
    return fleet_launch{launched->agent, std::move(launched->stop_engine), {}};
  }
};

// fleet.json: what `fleet status` needs (its results file, its task count and the ids of its
// invalid lines) and the flags it ran with, so that `troupe fleet --fleet-id ID` alone reruns it
// as it was started.
void write_fleet_record(const fleet_paths& fleet, const fleet_flags& flags,
                        const std::filesystem::path& results, const std::string& source,
                        int64_t total, const std::vector<std::string>& invalid_ids) {
  const auto& agent = flags.agent;
  nlohmann::json record = {{"id", fleet.id()},
                           {"results", results.string()},
                           {"tasks_source", source},
                           {"total", total},
                           {"invalid_ids", invalid_ids},
                           {"updated_ms", now_ms()},
                           {"flags",
                            {{"cwd", agent.cwd},
                             {"model", agent.model},
                             {"max_steps", agent.max_steps},
                             {"permission_mode", agent.permission_mode},
                             {"allow", agent.allow},
                             {"deny", agent.deny},
                             {"settings", agent.settings_file},
                             {"mcp_configs", agent.mcp_configs},
                             {"strict_mcp_config", agent.strict_mcp_config},
                             {"sandbox", agent.sandbox},
                             {"sandbox_network", agent.sandbox_network},
                             {"add_dirs", agent.add_dirs},
                             {"bare", agent.bare},
                             {"tool_format", agent.tool_format},
                             {"no_stream", agent.no_stream},
                             {"max_tool_output", agent.max_tool_output},
                             {"max_agents", agent.max_agents},
                             {"max_agent_depth", agent.max_agent_depth},
                             {"concurrency", flags.concurrency},
                             {"shell_idle_stop", flags.shell_idle_stop}}}};
  if (auto problem = write_private_file(fleet.info(), dump(record) + "\n"); !problem.empty())
    spdlog::warn("fleet: {}", problem);
}

std::optional<nlohmann::json> read_fleet_record(const fleet_paths& fleet) {
  std::string text;
  if (!read_whole_file(fleet.info(), text).empty())
    return std::nullopt;
  auto record = nlohmann::json::parse(text, nullptr, false);
  if (!record.is_object())
    return std::nullopt;
  return record;
}

// A rerun's flags: what it gives, else what the fleet was started with.
void fill_from_record(fleet_flags& flags, const nlohmann::json& record) {
  auto recorded = record.value("flags", nlohmann::json::object());
  if (!recorded.is_object())
    return;
  auto text = [&](std::string& value, const char* key) {
    if (value.empty() && recorded.contains(key) && recorded[key].is_string())
      value = recorded[key].get<std::string>();
  };
  auto rules = [&](std::vector<std::string>& value, const char* key) {
    if (value.empty() && recorded.contains(key) && recorded[key].is_array())
      for (auto& rule : recorded[key])
        if (rule.is_string())
          value.push_back(rule.get<std::string>());
  };
  auto& agent = flags.agent;
  text(agent.cwd, "cwd");
  text(agent.model, "model");
  text(agent.max_steps, "max_steps");
  text(agent.permission_mode, "permission_mode");
  rules(agent.allow, "allow");
  rules(agent.deny, "deny");
  text(agent.settings_file, "settings");
  rules(agent.mcp_configs, "mcp_configs");
  if (recorded.value("strict_mcp_config", false))
    agent.strict_mcp_config = true;
  text(agent.sandbox, "sandbox");
  rules(agent.add_dirs, "add_dirs");
  if (recorded.value("sandbox_network", false))
    agent.sandbox_network = true;
  if (recorded.value("bare", false))
    agent.bare = true;
  text(agent.tool_format, "tool_format");
  text(agent.max_tool_output, "max_tool_output");
  text(agent.max_agents, "max_agents");
  text(agent.max_agent_depth, "max_agent_depth");
  text(flags.concurrency, "concurrency");
  text(flags.shell_idle_stop, "shell_idle_stop");
  if (recorded.value("no_stream", false))
    agent.no_stream = true;
  if (flags.out.empty() && record.contains("results") && record["results"].is_string())
    flags.out = record["results"].get<std::string>();
}

// syncfs(2) on the file systems holding the fleet's folder and its results file.
void sync_file_systems(const std::filesystem::path& fleet_dir,
                       const std::filesystem::path& results) {
  for (const auto& path : {fleet_dir, results}) {
    file_handle fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (fd && ::syncfs(fd.get()) != 0)
      spdlog::warn("cannot sync {} to disk: {}", path.string(), std::strerror(errno));
  }
}

// Prints on one stream from whichever thread reports (the dispatcher's, the main thread).
class fleet_output {
public:
  fleet_output(std::string fleet_id, bool stream_json, bool live)
    : fleet_id_(std::move(fleet_id)), stream_json_(stream_json), live_(live) {}

  void event(const nlohmann::json& line) {
    if (!stream_json_)
      return;
    std::lock_guard<std::mutex> lock{mutex_};
    auto text = dump(line) + "\n";
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  }

  void result(const std::string& line) {
    if (!stream_json_)
      return;
    auto parsed = nlohmann::json::parse(line, nullptr, false);
    if (!parsed.is_object())
      return;
    nlohmann::json event = {{"type", "fleet_task_result"}};
    event.update(parsed);
    this->event(event);
  }

  void progress(const fleet_progress& p, bool last) {
    auto text = progress_line(fleet_id_, p);
    {
      std::lock_guard<std::mutex> lock{mutex_};
      last_ = p;
      if (live_)
        std::fprintf(stderr, "\r\033[K%s%s", printable(text).c_str(), last ? "\n" : "");
      else
        std::fprintf(stderr, "%s\n", printable(text).c_str());
      std::fflush(stderr);
    }
    auto json = progress_json(fleet_id_, p);
    json["type"] = last ? "fleet_ended" : "fleet_progress";
    if (last) // without a result yet: what a rerun (troupe fleet --fleet-id ID) runs
      json["left_for_rerun"] = p.total - p.completed - p.failed - p.budget;
    event(json);
  }

  /// The last progress reported (what is known if the dispatcher dies).
  fleet_progress last() {
    std::lock_guard<std::mutex> lock{mutex_};
    return last_;
  }

private:
  std::string fleet_id_;
  bool stream_json_;
  bool live_;
  std::mutex mutex_;
  fleet_progress last_;
};

expected<long> positive_count(const std::string& text, const char* flag, long high,
                              const char* what) {
  return parse_count(text, flag, 1, high, what);
}

} // namespace

fleet_commands add_fleet_command(CLI::App& app, fleet_flags& flags) {
  fleet_commands commands;
  auto* fleet = app.add_subcommand(
    "fleet", "run one agent per task of a JSONL or CSV file, many at once in this process; "
             "rerun with the same --fleet-id or --out to resume");
  commands.fleet = fleet;
  auto& agent = flags.agent;
  fleet->add_option("tasks", flags.tasks,
                    "the tasks file: one JSON object per line ({\"id\", \"prompt\", ...}) or CSV "
                    "with a header; - reads stdin")
    ->type_name("TASKS");
  fleet->add_option("--out,-o", flags.out,
                    "append one result line per task here (default: the fleet's "
                    "results.jsonl)")
    ->type_name("FILE");
  fleet->add_option("--fleet-id", flags.fleet_id,
                    "the fleet's id: a rerun with the same id resumes it (default: from --out, "
                    "else a new one)");
  fleet->add_option("--concurrency,-j", flags.concurrency,
                    "most tasks running at once (default 16)")
    ->type_name("N");
  fleet->add_option("--budget-tokens", flags.budget_tokens,
                    "once this run's tasks have used this many tokens, start no more")
    ->type_name("TOKENS");
  fleet->add_option("--budget-usd", flags.budget_usd,
                    "once this run's tasks have cost this many US dollars, start no more")
    ->type_name("USD");
  fleet->add_option("--model,-m", agent.model,
                    "every task's model unless it names one (default: $TROUPE_MODEL)");
  fleet->add_option("--max-steps", agent.max_steps,
                    "most steps per turn of each task unless it says (default: no cap)");
  fleet->add_option("--cwd", agent.cwd, "the tasks' workspace; a task's cwd is relative to it");
  fleet->add_option("--output-format", agent.output_format,
                    "text (a summary at the end) or stream-json (results and progress as JSON "
                    "lines on stdout)")
    ->check(CLI::IsMember({"text", "stream-json"}));
  fleet->add_option("--permission-mode", agent.permission_mode,
                    "default (headless: what would ask is refused), accept-edits, plan, bypass")
    ->type_name("MODE");
  add_repeated_option(*fleet, "--allow", agent.allow,
                      "allow a tool or Tool(pattern) for every task", "RULE");
  add_repeated_option(*fleet, "--deny", agent.deny, "deny a tool or Tool(pattern) for every task",
                      "RULE");
  add_sandbox_flags(*fleet, agent);
  add_bare_flag(*fleet, agent);
  fleet->add_option("--settings", agent.settings_file, "a settings JSON file read after the others")
    ->type_name("FILE");
  add_repeated_option(*fleet, "--mcp-config", agent.mcp_configs,
                      "MCP servers ({\"mcpServers\": {…}}) for every task, a file or JSON; "
                      "repeatable", "FILE|JSON");
  fleet->add_flag("--strict-mcp-config", agent.strict_mcp_config,
                  "only --mcp-config's servers, none from settings or .mcp.json");
  fleet->add_option("--max-retries", agent.max_retries,
                    "retries of a failed API request (429, 5xx, connection errors)")
    ->check(CLI::Range(0, 100));
  fleet->add_option("--shell-idle-stop", flags.shell_idle_stop,
                    "stop a task's shell after this many idle seconds; its next command starts "
                    "a new one (default 30; 0: never)")
    ->type_name("SECONDS");
  fleet->add_flag("--no-stream", agent.no_stream, "ask the API for whole replies, not streams");
  fleet->add_option("--tool-format", agent.tool_format, "tool, markdown or xml")
    ->check(CLI::IsMember({"tool", "markdown", "xml"}));
  fleet->add_option("--max-tool-output", agent.max_tool_output,
                    "bytes of a tool result the model sees")
    ->type_name("BYTES");
  fleet->add_option("--max-agents", agent.max_agents,
                    "most subagents one task's agent runs at once (default 20)")
    ->type_name("N");
  fleet->add_option("--max-agent-depth", agent.max_agent_depth,
                    "deepest nesting of subagents (default 3)")
    ->type_name("N");
  auto* status = fleet->add_subcommand("status", "how far a fleet is: its tasks' results counted");
  commands.status = status;
  status->add_option("fleet-id", flags.status_id, "the fleet's id")->required();
  status->add_flag("--json", flags.status_json, "one JSON object");
  return commands;
}

int run_fleet(const fleet_flags& flags) {
  auto home = troupe_home();
  fleet_flags given = flags;
  // Which fleet: named, named by its results file, or new.
  std::error_code ec;
  std::string fleet_id = given.fleet_id;
  if (!fleet_id.empty() &&
      (!is_valid_session_id(fleet_id) || fleet_id.size() > 64 || fleet_id.front() == '-'))
    return fail("invalid --fleet-id '" + fleet_id +
                "': at most 64 letters, digits, '.', '_' and '-', not starting with '-'");
  if (fleet_id.empty())
    fleet_id = given.out.empty() ? new_session_id() : fleet_id_for_out(real_out(given.out));
  auto fleet = fleet_paths::of(home, fleet_id);
  // A rerun goes on as the fleet was started: its results file, workspace, model, rules.
  auto record = read_fleet_record(fleet);
  if (record)
    fill_from_record(given, *record);
  auto out = given.out.empty() ? std::filesystem::path{} : real_out(given.out);
  if (!out.empty() && std::filesystem::is_directory(out, ec))
    return fail("--out " + given.out + " is a directory: name the results file");
  if (!out.empty() && !given.tasks.empty() && given.tasks != "-" &&
      real_out(given.tasks) == out)
    return fail("--out " + given.out + " is the tasks file: name another file for the results");

  // The tasks: the file given, else the fleet's own copy from an earlier run.
  std::string source = given.tasks;
  bool own_copy = source.empty();
  if (own_copy) {
    if (flags.fleet_id.empty() && flags.out.empty())
      return fail("no tasks file: troupe fleet TASKS.jsonl (or TASKS.csv, or - for stdin)");
    if (!std::filesystem::exists(fleet.tasks(), ec))
      return fail("no tasks file, and fleet " + fleet_id + " has not run before");
    source = fleet.tasks().string();
  }
  auto text = read_tasks_text(source);
  if (!text)
    return fail(text.error());
  auto parsed = parse_fleet_tasks(*text, guess_fleet_tasks_format(source, *text));
  if (!parsed)
    return fail(source + ": " + parsed.error());

  auto concurrency = given.concurrency.empty()
                       ? expected<long>{default_concurrency}
                       : positive_count(given.concurrency, "--concurrency", most_concurrency, "tasks");
  if (!concurrency)
    return fail(concurrency.error());
  int64_t budget_tokens = 0;
  if (!given.budget_tokens.empty()) {
    auto tokens = positive_count(given.budget_tokens, "--budget-tokens", 1L << 50, "tokens");
    if (!tokens)
      return fail(tokens.error());
    budget_tokens = *tokens;
  }
  double budget_usd = 0;
  if (!given.budget_usd.empty()) {
    char* end = nullptr;
    budget_usd = std::strtod(given.budget_usd.c_str(), &end);
    if (end == given.budget_usd.c_str() || *end != '\0' || !(budget_usd > 0) ||
        !std::isfinite(budget_usd))
      return fail("invalid --budget-usd '" + given.budget_usd + "': a positive amount, e.g. 2.50");
  }
  auto idle_stop = given.shell_idle_stop.empty()
                     ? expected<long>{default_shell_idle_stop_s}
                     : parse_count(given.shell_idle_stop, "--shell-idle-stop", 0, 86400, "seconds");
  if (!idle_stop)
    return fail(idle_stop.error());

  run_settings base;
  if (auto basics = resolve_basics(given.agent, base); !basics)
    return fail(basics.error());
  // Tasks that each name their model need none from the fleet: the first usable one stands in
  // for what the fleet's settings are checked with (a task whose model cannot be used fails
  // alone, later).
  auto agent_flags = given.agent;
  bool every_task_names_a_model =
    !parsed->tasks.empty() && std::all_of(parsed->tasks.begin(), parsed->tasks.end(),
                                          [](const fleet_task& t) { return !t.model.empty(); });
  if (agent_flags.model.empty() && env_or("TROUPE_MODEL").empty() && every_task_names_a_model) {
    std::optional<std::string> first_error;
    std::set<std::string> tried;
    for (auto& task : parsed->tasks) {
      agent_flags.model = anchored_model_spec(task.model, base.cwd);
      if (!tried.insert(agent_flags.model).second)
        continue;
      auto attempt = base;
      auto agent = resolve_agent(agent_flags, false, attempt);
      if (agent) {
        base = std::move(attempt);
        first_error.reset();
        break;
      }
      if (!first_error)
        first_error = agent.error();
    }
    if (first_error)
      return fail(*first_error);
    agent_flags.model.clear(); // not the fleet's: not recorded as such
  } else if (auto agent = resolve_agent(agent_flags, false, base); !agent) {
    return fail(agent.error());
  }
  base.ask_on_terminal = false; // nobody answers questions for a fleet
  base.shell_idle_stop = std::chrono::seconds{*idle_stop};
  // Each running task holds a descriptor (its transcript), and the HTTP engine up to a quarter
  // of them: more tasks at once than that would fail on EMFILE, not wait.
  auto descriptors = raise_open_file_limit();
  auto reserve = std::min<rlim_t>(256, descriptors / 8); // the process's own, a few tools'
  auto most_at_once =
    std::max<long>(1, static_cast<long>(descriptors - descriptors / 4 - reserve));
  if (*concurrency > most_at_once) {
    spdlog::warn("--concurrency {} is more than {} open files allow (ulimit -n {}): {} tasks run "
                 "at once",
                 *concurrency, descriptors, descriptors, most_at_once);
    concurrency = most_at_once;
  }

  auto locked = session_lock::take(fleet);
  if (!locked)
    return fail(locked.error());
  auto results_path = out.empty() ? fleet.results() : out;
  auto earlier = read_fleet_results(results_path);
  if (!earlier)
    return fail(earlier.error());
  for (auto& skipped : earlier->skipped)
    spdlog::warn("{}: {} (not a result: that task runs again)", results_path.string(), skipped);
  std::string torn;
  auto writer = fleet_results_writer::open(results_path, &torn);
  if (!writer)
    return fail(writer.error());
  if (!torn.empty())
    spdlog::warn("{}: cut off its last line, which a kill left without its end (that task runs "
                 "again): {}", results_path.string(), torn.substr(0, 200));
  // The fleet's own copy of its tasks: `troupe fleet --fleet-id ID` reruns it without the file.
  std::vector<std::string> invalid_ids;
  for (auto& error : parsed->errors)
    invalid_ids.push_back(error.id);
  if (!own_copy) {
    std::string copy;
    for (auto& task : parsed->tasks)
      copy += fleet_task_line(task) + "\n";
    if (auto problem = write_private_file(fleet.tasks(), copy); !problem.empty())
      return fail(problem);
  } else if (record && record->contains("invalid_ids") && (*record)["invalid_ids"].is_array()) {
    for (auto& id : (*record)["invalid_ids"])
      if (id.is_string())
        invalid_ids.push_back(id.get<std::string>());
  }
  auto total = static_cast<int64_t>(parsed->tasks.size() + invalid_ids.size());

  bool stream_json = given.agent.output_format == "stream-json";
  bool live = isatty(STDERR_FILENO) != 0;
  auto output = std::make_shared<fleet_output>(fleet_id, stream_json, live);
  auto config = std::make_shared<fleet_dispatcher_config>();
  config->fleet_id = fleet_id;
  config->concurrency = static_cast<size_t>(*concurrency);
  config->budget_tokens = budget_tokens;
  config->budget_usd = budget_usd;
  config->start.total = total;
  // What earlier runs finished counts, as far as it is one of this file's tasks. A task refused
  // for the budget is not finished: it runs again, and its new line follows.
  std::set<std::string> known{invalid_ids.begin(), invalid_ids.end()};
  for (auto& task : parsed->tasks)
    known.insert(task.id);
  std::set<std::string> valid_now;
  for (auto& task : parsed->tasks)
    valid_now.insert(task.id);
  // A task refused for the budget, or a line that was invalid and is a task now (the user fixed
  // it), is not finished.
  auto finished = [&](const std::string& id) {
    auto at = earlier->by_id.find(id);
    return at != earlier->by_id.end() && at->second.error != "budget" &&
           !(valid_now.count(id) && at->second.error.rfind("invalid task", 0) == 0);
  };
  for (auto& [id, result] : earlier->by_id) {
    if (!known.count(id) || !finished(id))
      continue;
    if (result.error.empty() && result.terminal_reason == "completed")
      ++config->start.completed;
    else
      ++config->start.failed;
  }
  output->event({{"type", "fleet_started"},
                 {"fleet_id", fleet_id},
                 {"results", results_path.string()},
                 {"total", total},
                 {"done_before", config->start.completed + config->start.failed}});
  // Invalid lines get their result line now (once), under their id or their line number.
  for (auto& error : parsed->errors) {
    fleet_task named;
    named.id = error.id;
    if (finished(named.id))
      continue;
    spdlog::warn("{}: line {}: {}", source, error.line, error.message);
    auto line = fleet_error_line(named, "", "invalid task (line " + std::to_string(error.line) +
                                              "): " + error.message);
    if (auto written = writer->append(line); !written)
      return fail_at_runtime(written.error());
    output->result(line);
    ++config->start.failed;
  }
  // After the invalid lines' results: a record naming them means they have their lines.
  // Recorded as they resolve: a rerun from another directory finds the same workspace, script
  // and settings file.
  auto recorded = given;
  recorded.agent.cwd = base.cwd.string();
  std::error_code here_ec;
  auto here = std::filesystem::current_path(here_ec);
  if (!agent_flags.model.empty())
    recorded.agent.model = anchored_model_spec(agent_flags.model, here);
  if (!recorded.agent.settings_file.empty())
    recorded.agent.settings_file = std::filesystem::absolute(recorded.agent.settings_file).string();
  for (auto& dir : recorded.agent.add_dirs)
    dir = std::filesystem::absolute(dir).string();
  for (auto& servers : recorded.agent.mcp_configs)
    if (!is_inline_json(servers))
      servers = std::filesystem::absolute(servers).string();
  write_fleet_record(fleet, recorded, results_path, source == "-" ? "stdin" : source, total,
                     invalid_ids);
  for (auto& task : parsed->tasks)
    if (!finished(task.id))
      config->tasks.push_back(std::move(task));
  config->results = std::move(*writer);
  if (base.permissions.mode == permission_mode::bypass)
    std::fprintf(stderr,
                 "troupe: WARNING: permission mode bypass: every tool call of every task runs "
                 "without asking (deny rules still hold; sandbox %s)\n",
                 summary(base.sandbox).c_str());

  block_termination_signals();
  if (base.http_model)
    http_engine::warm_up(base.libcurl, base.http_model->provider.base_url);
  process_reaper reaper;
  warn_without_subreaper(reaper);
  caf::actor_system_config cfg;
  configure_actor_system(cfg);
  caf::actor_system sys{cfg};

  auto commons = std::make_shared<agent_commons>();
  commons->disk = spawn_disk_io(sys, base.max_notification_bytes);
  // The MCP servers start once for every task (those of scope "agent" with each task), and
  // the first task waits for them as a run's first request does.
  if (!base.mcp_servers.empty()) {
    // Under the fleet's name, in walls of their own (each task keeps its own private /tmp).
    run_settings servers = base;
    servers.session_id = "fleet-" + fleet.id();
    servers.history.clear();
    if (servers.sandbox.mode != sandbox_mode::off)
      servers.sandbox_walls = std::make_shared<const sandbox_policy>(servers.sandbox, servers.cwd);
    if (auto started = start_mcp_servers(sys, servers, std::nullopt); !started)
      return fail(started.error());
    servers.render.format = output_format::text;
    await_mcp_servers(sys, servers);
    base.mcp = servers.mcp;
  }
  auto mcp = base.mcp;
  auto shared_base = std::make_shared<run_settings>(std::move(base));
  config->launch = task_launcher{shared_base, given.agent, fleet, commons, {}, {}, {}};
  config->busy = [fleet](const fleet_task& task) { return task_busy(fleet, task); };
  config->settled = [fleet](const fleet_task& task) { return settled_line(fleet, task); };
  config->on_result = [output](const std::string& line) { output->result(line); };
  config->progress_every = live ? terminal_progress_every : plain_progress_every;
  config->on_progress = [output](const fleet_progress& p) { output->progress(p, false); };
  auto ended = std::make_shared<std::promise<fleet_progress>>();
  auto ended_future = ended->get_future();
  auto end_told = std::make_shared<std::atomic<bool>>(false);
  config->on_end = [ended, end_told](const fleet_progress& p) {
    if (!end_told->exchange(true))
      ended->set_value(p);
  };
  auto dispatcher = spawn_fleet_dispatcher(sys, config);
  // A dispatcher that fails inside (an exception) ends the wait too, instead of hanging it.
  caf::actor_cast<caf::actor>(dispatcher)->attach_functor([ended, end_told, total, output] {
    if (end_told->exchange(true))
      return;
    spdlog::error("fleet: the dispatcher stopped before the fleet's end; the results written "
                  "so far are kept, and a rerun runs the rest");
    auto seen = output->last();
    seen.total = total;
    seen.running = seen.queued = 0;
    ended->set_value(seen);
  });

  std::atomic<int> signals_seen{0};
  signal_forwarder forwarder{[&](int sig) {
    if (sig == SIGWINCH)
      return;
    if (signals_seen.fetch_add(1) == 0)
      caf::anon_send<caf::message_priority::high>(dispatcher, interrupt_atom::value);
  }};
  caf::anon_send(dispatcher, start_atom::value);

  using namespace std::chrono_literals;
  std::optional<fleet_progress> last;
  while (!last) {
    if (ended_future.wait_for(50ms) == std::future_status::ready) {
      last = ended_future.get();
    } else if (signals_seen.load() > 1) {
      std::fprintf(stderr, "\ntroupe: interrupted twice: stopped at once; the results written "
                           "so far are kept, and a rerun resumes the rest\n");
      sys.await_actors_before_shutdown(false);
      std::fflush(stdout);
      std::_Exit(130);
    }
  }
  output->progress(*last, true);
  // The tasks' transcripts and the results, to disk in one go (a task does not fsync its own).
  sync_file_systems(fleet.dir(), results_path);
  // Nothing of the fleet's may keep the actor system waiting at exit.
  if (commons->engine)
    commons->engine->stop();
  if (mcp)
    mcp->stop();
  caf::anon_send_exit(commons->disk, caf::exit_reason::user_shutdown);
  config.reset();
  commons.reset();
  auto left = last->total - last->completed - last->failed - last->budget;
  int code = last->stopping                                   ? 130
             : last->failed > 0 || last->budget > 0 || left > 0 ? 1
                                                               : 0;
  if (!stream_json) {
    std::printf("fleet %s: %" PRId64 " completed, %" PRId64 " failed", fleet_id.c_str(),
                last->completed, last->failed);
    if (last->budget > 0)
      std::printf(", %" PRId64 " not started (budget; a rerun runs them)", last->budget);
    if (left > 0)
      std::printf(", %" PRId64 " left for a rerun (troupe fleet --fleet-id %s)", left,
                  fleet_id.c_str());
    std::printf("; results in %s\n", results_path.string().c_str());
    std::fflush(stdout);
  }
  exit_if_still_running_after(std::chrono::milliseconds{3000}, code, stdout);
  return code;
}

int run_fleet_status(const fleet_flags& flags) {
  if (!is_valid_session_id(flags.status_id))
    return fail("invalid fleet id '" + flags.status_id + "'");
  auto fleet = fleet_paths::of(troupe_home(), flags.status_id);
  std::string record_text;
  if (auto problem = read_whole_file(fleet.info(), record_text); !problem.empty())
    return fail_at_runtime("unknown fleet '" + flags.status_id + "' (" + problem + ")");
  auto record = nlohmann::json::parse(record_text, nullptr, false);
  if (!record.is_object() || !record.contains("results") || !record["results"].is_string())
    return fail_at_runtime(fleet.info().string() + " is not a fleet's record");
  std::filesystem::path results_path = record["results"].get<std::string>();
  auto results = read_fleet_results(results_path);
  if (!results)
    return fail_at_runtime(results.error());
  auto counts = count_fleet_results(*results);
  int64_t total = record.value("total", int64_t{0});
  int64_t with_result = counts.completed + counts.failed + counts.budget;
  bool running = lock_held(fleet.lock());
  if (flags.status_json) {
    nlohmann::json status = {{"fleet_id", fleet.id()},
                             {"total", total},
                             {"completed", counts.completed},
                             {"failed", counts.failed},
                             {"budget", counts.budget},
                             {"without_result", std::max<int64_t>(0, total - with_result)},
                             {"by_reason", counts.by_reason},
                             {"running", running},
                             {"results", results_path.string()}};
    std::printf("%s\n", dump(status).c_str());
    return 0;
  }
  std::printf("fleet %s: %" PRId64 " tasks, %" PRId64 " completed, %" PRId64 " failed",
              fleet.id().c_str(), total, counts.completed, counts.failed);
  if (counts.budget > 0)
    std::printf(", %" PRId64 " not started (budget)", counts.budget);
  std::printf(", %" PRId64 " without a result%s\n", std::max<int64_t>(0, total - with_result),
              running ? " (running now)" : "");
  for (auto& [reason, count] : counts.by_reason)
    std::printf("  %-22s %" PRId64 "\n", printable(reason).c_str(), count);
  std::printf("results: %s\n", results_path.string().c_str());
  return 0;
}

} // namespace troupe
