#include "orchestrator/run_command.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <chrono>
#include <csignal>
#include <cstring>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include <unistd.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include "actors/agent.hpp"
#include "actors/control_endpoint.hpp"
#include "actors/disk_io.hpp"
#include "actors/http_engine.hpp"
#include "actors/http_model.hpp"
#include "actors/namer.hpp"
#include "actors/runtime.hpp"
#include "actors/scripted_model.hpp"
#include "store/ids.hpp"
#include "store/session_catalog.hpp"
#include "orchestrator/environment.hpp"
#include "orchestrator/model_flags.hpp"
#include "orchestrator/permission_prompt.hpp"
#include "orchestrator/renderer.hpp"
#include "orchestrator/signals.hpp"
#include "orchestrator/stream_json_client.hpp"
#include "tools/child_process.hpp"
#include "tools/prompt.hpp"
#include "tools/shell.hpp"
#include "tools/task.hpp"

namespace troupe {

namespace {

constexpr const char* subagent_note =
  "\n\nYou are a subagent: another agent gave you this task. Work on it alone (nobody answers "
  "questions), and end with a final message that reports what you found or did; that message "
  "is all the other agent gets.";

// troupe's prompt for a registry and format, then the project's instructions, then `tail` (a
// task's own text, a subagent type's, the subagent note), which brings its own separation.
std::string compose_prompt(const tool_registry& registry, tool_format format,
                           const std::string& own, const project_instructions* instructions,
                           const std::string& tail) {
  auto prompt = build_system_prompt(registry, format, own);
  if (instructions != nullptr && !instructions->text.empty())
    prompt += "\n\n" + instructions->text;
  return prompt + tail;
}

std::string listed(const std::vector<std::string>& names) {
  std::string text;
  for (auto& name : names)
    text += (text.empty() ? "" : ", ") + name;
  return text;
}

// What the subagents of one custom type share: their tools and their prompt per tool format.
struct typed_agents {
  std::shared_ptr<const tool_registry> registry;
  std::array<shared_value<std::string>, 3> prompts;
};

// What every subagent of a run shares: how to build its model, tools and session.
struct subagent_setup {
  run_settings settings; // the parent run's, without its history and prompt
  std::shared_ptr<const tool_registry> registry;
  std::shared_ptr<const permission_policy> permissions;
  std::optional<http_engine> engine;
  /// The engine was started for this agent's subagents (its own model is scripted): stopped
  /// with it, even in a fleet, whose shared engine is the fleet's to stop.
  bool own_engine = false;
  disk_io_actor disk;
  subagent_factory factory; // itself: subagents launch subagents
  /// Asks a stream-json client about subagents' calls (--permission-prompt-tool stdio).
  permission_asker_actor asker;
  /// Sinks that follow every subagent's messages (set before the run starts, read after).
  std::vector<event_sink_actor> watchers;
  /// A subagent's system prompt for the shared registry, one per tool format, made before any
  /// launch (read from every supervisor's thread, never written after): children share it.
  std::array<shared_value<std::string>, 3> child_prompts;
  /// The workspace's instructions, which subagents get too, and its custom subagent types.
  std::shared_ptr<const project_instructions> instructions;
  std::shared_ptr<const agent_types> types;
  /// Per custom type: its registry and prompts, made on its first launch. Launches come from
  /// every supervisor's thread, so they are made under the lock and never changed after.
  std::mutex typed_lock;
  std::map<std::string, typed_agents> typed;
};

// The registry and prompts of subagents of `type`: the parent's tools that the type names (all
// of them when it names none) but those it disallows.
const typed_agents& typed_for(subagent_setup& setup, const agent_type& type) {
  std::lock_guard<std::mutex> hold{setup.typed_lock};
  auto [entry, fresh] = setup.typed.try_emplace(type.name);
  if (!fresh)
    return entry->second;
  auto named = [](const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  std::vector<tool_spec> tools;
  for (auto& tool : setup.registry->tools())
    if ((type.tools.empty() || named(type.tools, tool.name)) &&
        !named(type.disallowed_tools, tool.name))
      tools.push_back(tool);
  auto& typed = entry->second;
  typed.registry = std::make_shared<const tool_registry>(std::move(tools));
  auto tail = (type.prompt.empty() ? "" : "\n\n" + type.prompt) + subagent_note;
  for (auto format : {tool_format::tool, tool_format::markdown, tool_format::xml})
    typed.prompts.at(static_cast<size_t>(format)) =
      shared_value<std::string>{compose_prompt(*typed.registry, format, default_instructions,
                                               setup.instructions.get(), tail)};
  return typed;
}

// What a session's processes get over troupe's own environment: the session's own id (a
// subagent's is its agent id, so `troupe notify "$TROUPE_SESSION_ID"` reaches it), the home
// and this binary. Passed to each session; the process's environment is never changed.
child_environment session_environment(const std::string& session_id,
                                      const run_settings& settings) {
  child_environment env;
  env["TROUPE_SESSION_ID"] = session_id;
  env["TROUPE_HOME"] = settings.troupe_home.string();
  std::error_code ec;
  auto self_path = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec)
    env["TROUPE_BIN"] = self_path.string();
  return env;
}

// The HTTP engine, started on first use by a run whose own model is scripted.
expected<bool> ensure_engine(caf::actor_system& sys, subagent_setup& setup) {
  if (setup.engine)
    return true;
  auto started = http_engine::start(sys, setup.settings.libcurl);
  if (!started)
    return failure{started.error()};
  setup.engine = std::move(*started);
  setup.own_engine = true;
  return true;
}

expected<session_actor> spawn_subagent(caf::actor_system& sys,
                                       const std::shared_ptr<subagent_setup>& setup,
                                       const subagent_launch& launch, agent_parent_actor parent) {
  const auto& parent_settings = setup->settings;
  session_paths paths{launch.session_dir};
  // Its custom type: the launch's (the supervisor checked it), or the one a resumed agent ran
  // as; a type no longer defined leaves it troupe's own subagent.
  auto type_name = launch.agent_type;
  if (type_name.empty() && launch.resume)
    type_name = read_session(paths).info.agent_type;
  const agent_type* type = nullptr;
  if (!type_name.empty() && setup->types)
    for (auto& each : *setup->types)
      if (each.name == type_name)
        type = &each;
  if (!type_name.empty() && type == nullptr)
    spdlog::warn("agent {} ran as type '{}', which is no longer defined: resumed as a "
                 "general-purpose subagent",
                 launch.agent_id, type_name);
  const auto& wanted_model = !launch.model.empty() ? launch.model
                             : type != nullptr     ? type->model
                                                   : launch.model;
  // The model: the parent's, or one of its own. Never a copy of the parent's script: a child of
  // a scripted run names its own, and a parent's script that launches a thousand agents holds
  // a thousand calls (copying it per launch made a fan-out quadratic).
  model_choice model{std::nullopt, parent_settings.http_model, parent_settings.format};
  std::string model_name = parent_settings.model_name;
  if (!wanted_model.empty() || parent_settings.model_script) {
    if (wanted_model.empty())
      return failure{"this run's model is scripted, so a subagent needs a \"model\" of its "
                     "own (scripted:PATH, relative to the workspace)"};
    auto spec = anchored_model_spec(wanted_model, parent_settings.cwd);
    auto resolved = setup->settings.resolve_model ? setup->settings.resolve_model(spec)
                                                  : expected<model_choice>{failure{"no resolver"}};
    if (!resolved)
      return failure{resolved.error()};
    model = std::move(*resolved);
    model_name = spec; // a script recorded absolute, as the parent's is
  }
  if (model.http_model) {
    if (auto usable = http_engine::check_libcurl_for(model.http_model->provider.base_url,
                                                     setup->settings.libcurl);
        !usable)
      return failure{usable.error()};
    if (auto started = ensure_engine(sys, *setup); !started)
      return failure{started.error()};
  }
  // Its tools: the parent's (or its type's), or the ones named of those. At the depth cap the
  // task tool stays, so that a launch gets the cap's clear error instead of "unknown tool".
  // All of them: the parent's registry itself, shared (a fan-out of a thousand agents would
  // otherwise hold a thousand copies of every tool's schema); a type's is shared the same way.
  const typed_agents* typed = type != nullptr ? &typed_for(*setup, *type) : nullptr;
  auto offered = typed != nullptr ? typed->registry : setup->registry;
  for (auto& name : launch.tools)
    if (offered->find(name) == nullptr)
      return failure{"unknown tool '" + name + "' in tools" +
                     (typed != nullptr ? " (agents of type " + type->name + " have: " +
                                           listed(offered->names()) + ")"
                                       : "")};
  auto registry = offered;
  if (!launch.tools.empty()) {
    std::vector<tool_spec> tools;
    for (auto& tool : offered->tools())
      if (std::find(launch.tools.begin(), launch.tools.end(), tool.name) != launch.tools.end())
        tools.push_back(tool);
    registry = std::make_shared<const tool_registry>(std::move(tools));
  }

  session_config child;
  child.session_id = launch.agent_id;
  child.session_dir = launch.session_dir;
  child.model_name = model_name;
  child.format = model.format;
  auto tail = (type != nullptr && !type->prompt.empty() ? "\n\n" + type->prompt : "") +
              std::string{subagent_note};
  if (registry == setup->registry)
    child.system_prompt = setup->child_prompts.at(static_cast<size_t>(model.format));
  else if (typed != nullptr && registry == typed->registry)
    child.system_prompt = typed->prompts.at(static_cast<size_t>(model.format));
  else
    child.system_prompt =
      compose_prompt(*registry, model.format, default_instructions, setup->instructions.get(), tail);
  child.memory_files = setup->instructions ? setup->instructions->files
                                           : std::vector<std::string>{};
  child.subagent_types = setup->types;
  child.cwd = parent_settings.cwd;
  child.registry = registry;
  child.budget = parent_settings.budget;
  child.max_steps = launch.max_steps > 0 ? launch.max_steps : parent_settings.max_steps;
  child.max_parallel_tools = parent_settings.max_parallel_tools;
  child.permissions = setup->permissions;
  child.description = launch.description;
  if (launch.resume) {
    auto loaded = load_session(paths, transcript_access::owner);
    if (!loaded)
      return failure{loaded.error()};
    warn_of_load_problems(*loaded);
    child.history = std::move(loaded->history);
    if (loaded->state)
      child.resumed_state = *loaded->state;
    child.info = read_session(paths).info; // its usage and cost add up over runs
    child.past_agents = agents_of(paths);
  } else {
    child.info.first_prompt = launch.prompt.substr(0, 200);
  }
  child.info.name = launch.description;
  child.info.name_source = "task";
  child.info.agent_type = type != nullptr ? type->name : std::string{};
  child.initial_inputs.push_back(make_input(launch.prompt, message_origin::parent));
  for (auto& next : launch.follow_ups)
    child.initial_inputs.push_back(make_input(next, message_origin::parent));
  child.spawn_subagent = setup->factory;
  child.depth = launch.depth;
  child.max_depth = parent_settings.max_agent_depth;
  child.max_children = parent_settings.max_agents;
  child.parent = parent;
  child.parent_queue = paths.launcher()->queue();
  child.stop_children_on_end = !parent_settings.let_agents_finish;
  child.disk = setup->disk;
  child.keep_state_files_open = parent_settings.commons == nullptr;
  child.sync_transcript_at_end = parent_settings.commons == nullptr;
  // Hooks guard subagents' calls as they guard the parent's (the input names the agent).
  child.hook_commands = parent_settings.hook_commands;
  child.hook_shell = parent_settings.shell_program;
  child.hook_callbacks = parent_settings.hook_callbacks;
  child.asker = setup->asker;
  child.parent_tool_use_id = launch.call_id;
  child.subscribers.insert(child.subscribers.end(), setup->watchers.begin(), setup->watchers.end());
  child.process_environment = session_environment(launch.agent_id, parent_settings);

  tool_context context;
  context.cwd = parent_settings.cwd;
  context.home = parent_settings.home;
  context.shell_program = parent_settings.shell_program;
  context.shell_idle_stop = parent_settings.shell_idle_stop;
  context.output_cap = parent_settings.max_tool_output;
  context.results_dir = paths.tool_results();
  context.tasks_dir = paths.tasks();
  context.notification_queue = paths.queue();
  // Unique in the process (agent ids are only unique in their parent), and no unit of the
  // parent's tag: a subagent's processes go when it ends, which may be after its parent.
  auto owner = paths.top().id() + "/" + paths.path_below_top();
  std::replace(owner.begin(), owner.end(), '/', ':');
  context.process_owner = owner;
  context.sandbox = parent_settings.sandbox_walls;
  // Its parent's MCP servers: the shared ones, and its own of those of scope "agent", tagged
  // with its unique owner.
  if (parent_settings.mcp) {
    auto mine = parent_settings.mcp->attach(sys, owner);
    child.mcp_servers = std::move(mine.servers);
    child.owned_mcp_servers = std::move(mine.owned);
  }

  model_client_actor client;
  if (model.http_model) {
    model.http_model->provider.max_tokens =
      static_cast<int32_t>(parent_settings.budget.output_reserve());
    client = spawn_http_model(sys, std::move(*model.http_model), *setup->engine);
  } else {
    client = spawn_scripted_model(sys, std::move(*model.model_script));
  }
  return spawn_agent(sys, std::move(child), std::move(context), std::move(client));
}

} // namespace

expected<bool> start_mcp_servers(caf::actor_system& sys, run_settings& settings,
                                 std::optional<http_engine> engine) {
  mcp_start_options options;
  options.workspace = settings.cwd;
  options.environment = session_environment(settings.session_id, settings);
  options.sandbox = settings.sandbox_walls;
  options.owner = settings.session_id;
  options.client = settings.mcp_client;
  if (auto timeouts = read_mcp_timeouts(options); !timeouts)
    return failure{timeouts.error()};
  bool wants_http = std::any_of(settings.mcp_servers.begin(), settings.mcp_servers.end(),
                                [](auto& s) { return s.transport == mcp_transport::http; });
  if (wants_http && !engine && settings.commons && settings.commons->engine)
    engine = settings.commons->engine;
  if (wants_http && !engine) {
    // An engine of their own, stopped with them: an HTTP server's requests need one.
    if (auto started = http_engine::start(sys, settings.libcurl); started) {
      engine = std::move(*started);
      options.own_http = true;
    } else {
      spdlog::warn("the MCP servers over HTTP cannot be reached: {}", started.error());
    }
  }
  options.http = engine;
  settings.mcp = std::make_shared<mcp_connections>(sys, settings.mcp_servers, std::move(options));
  return true;
}

void await_mcp_servers(caf::actor_system& sys, run_settings& settings) {
  if (!settings.mcp || settings.mcp->empty()) {
    if (settings.render.format == output_format::stream_json)
      settings.render.init_extras["mcp_servers"] = nlohmann::json::array();
    return;
  }
  // A signal ends the wait; the run then starts and takes it as it takes any (no model request).
  auto reports = settings.mcp->wait_for_startup(sys, termination_pending);
  const auto& configs = settings.mcp->configs();
  for (size_t i = 0; i < reports.size(); ++i) {
    const auto& report = reports[i];
    if (report.status == mcp_status::failed)
      std::fprintf(stderr, "troupe: MCP server %s failed: %s\n", report.server.c_str(),
                   report.error.c_str());
    else if (report.status == mcp_status::pending && configs[i].per_agent)
      spdlog::info("MCP server {} starts with each agent (scope \"agent\")", report.server);
    else if (report.status == mcp_status::pending)
      spdlog::info("MCP server {} is still starting (the wait was ended)", report.server);
  }
  if (settings.render.format == output_format::stream_json) {
    settings.render.init_extras["mcp_servers"] = mcp_init_entries(reports);
    auto names = nlohmann::json::array();
    for (auto& report : reports)
      if (report.status == mcp_status::connected)
        for (auto& tool : *report.tools)
          if (!settings.permissions.removes_tool(mcp_tool_name(report.server, tool.name)))
            names.push_back(mcp_tool_name(report.server, tool.name));
    settings.render.init_extras["mcp_tools"] = std::move(names);
  }
}

namespace {

// The tools a run offers: the built-in ones but those a bare deny rule removes. One registry
// per set of removed tools in a fleet.
std::shared_ptr<const tool_registry> offered_registry(const permission_policy& permissions,
                                                      const std::shared_ptr<const agent_types>& types,
                                                      agent_commons* commons) {
  std::vector<tool_spec> offered;
  std::string removed;
  // Built once per fleet: the specs' schemas are the costly part of a launch.
  std::shared_ptr<const tool_registry> built;
  if (commons && commons->builtin)
    built = commons->builtin;
  else
    built = std::make_shared<const tool_registry>(make_builtin_registry());
  if (commons)
    commons->builtin = built;
  bool typed = types && !types->empty();
  for (auto& tool : built->tools()) {
    if (permissions.removes_tool(tool.name))
      removed += tool.name + " ";
    else if (tool.name == "task" && typed)
      offered.push_back(task_tool(*types)); // its description lists the types
    else
      offered.push_back(tool);
  }
  // A workspace's types make a registry of their own (held by the fleet's per-workspace cache).
  if (typed)
    removed += "/" + std::to_string(reinterpret_cast<uintptr_t>(types.get()));
  if (commons)
    if (auto known = commons->registries.find(removed); known != commons->registries.end())
      return known->second;
  auto registry = std::make_shared<const tool_registry>(std::move(offered));
  if (commons)
    commons->registries.emplace(removed, registry);
  return registry;
}

// The system prompt for a registry and format: `own` (troupe's instructions, or
// --system-prompt's), the project's instructions, then `extra` ones after it; one per
// combination in a fleet (the project's instructions are one object per workspace, which the
// fleet keeps for its whole run).
shared_value<std::string> system_prompt_for(
  const std::shared_ptr<const tool_registry>& registry, tool_format format,
  const std::string& own, const std::shared_ptr<const project_instructions>& instructions,
  const std::string& extra, agent_commons* commons) {
  auto make = [&] {
    return compose_prompt(*registry, format, own, instructions.get(),
                          extra.empty() || extra == subagent_note ? extra : "\n\n" + extra);
  };
  // A task's own text makes a prompt of its own, dropped with the task: only the shared ones
  // are kept.
  if (!commons || (!extra.empty() && extra != subagent_note) || own != default_instructions)
    return make();
  auto key = std::to_string(reinterpret_cast<uintptr_t>(registry.get())) + "/" +
             std::to_string(static_cast<int>(format)) + "/" +
             std::to_string(reinterpret_cast<uintptr_t>(instructions.get())) + "/" + extra;
  if (auto known = commons->prompts.find(key); known != commons->prompts.end())
    return known->second;
  shared_value<std::string> prompt{make()};
  commons->prompts.emplace(key, prompt);
  return prompt;
}

// The main agent's system prompt: --system-prompt's instructions or troupe's, then
// --append-system-prompt's (or a fleet task's "system").
shared_value<std::string> main_system_prompt(const run_settings& settings,
                                             const std::shared_ptr<const tool_registry>& registry,
                                             tool_format format, agent_commons* commons) {
  return system_prompt_for(registry, format,
                           settings.custom_instructions.value_or(default_instructions),
                           settings.instructions, settings.extra_system, commons);
}

// The session's directories: a top-level session's under troupe's home, another's where its
// parent put it.
session_paths paths_of(const run_settings& settings) {
  return settings.session_dir.empty()
           ? session_paths::top_level(settings.troupe_home, settings.session_id)
           : session_paths{settings.session_dir};
}

// What the agent's tools run with: its executor's context, without the session's variables
// (added by the caller). Makes the session's walls first, once (its subagents share them: one
// private /tmp).
tool_context agent_tool_context(run_settings& settings, const session_paths& paths) {
  if (!settings.sandbox_walls && settings.sandbox.mode != sandbox_mode::off)
    settings.sandbox_walls = std::make_shared<const sandbox_policy>(settings.sandbox, settings.cwd);
  tool_context tools;
  tools.cwd = settings.cwd;
  tools.home = settings.home;
  tools.shell_program = settings.shell_program;
  tools.shell_idle_stop = settings.shell_idle_stop;
  tools.output_cap = settings.max_tool_output;
  tools.results_dir = paths.tool_results();
  tools.tasks_dir = paths.tasks();
  tools.notification_queue = paths.queue();
  tools.process_owner = settings.session_id;
  tools.sandbox = settings.sandbox_walls;
  tools.start_shell_early = settings.commons == nullptr;
  return tools;
}

} // namespace

expected<launched_agent> launch_agent(caf::actor_system& sys, run_settings& settings,
                                      permission_asker_actor asker) {
  auto* commons = settings.commons.get();
  auto registry = offered_registry(settings.permissions, settings.subagent_types, commons);
  if (settings.permissions.mode == permission_mode::bypass && !commons)
    std::fprintf(stderr,
                 "troupe: WARNING: permission mode bypass: every tool call runs without asking "
                 "(deny rules still hold; sandbox %s)\n",
                 summary(settings.sandbox).c_str());
  auto paths = paths_of(settings);
  auto tools = agent_tool_context(settings, paths);
  // The permission check sees paths as the tools do (/tmp is the sandbox's own).
  settings.permissions.context.sandbox = settings.sandbox_walls;
  spdlog::info("permission mode {}", to_string(settings.permissions.mode));
  // Tool processes can reach this session: `troupe notify "$TROUPE_SESSION_ID" …`. Given to
  // the tools here already (spawn_agent gives the session's, the same), so that a shell started
  // ahead has the executor's context.
  auto environment = session_environment(settings.session_id, settings);
  tools.environment = environment;
  // The top-level agent's shell starts now, beside the rest of the start-up, so that it is
  // running by the first command (bubblewrap alone takes ~5 ms of CPU), with the context its
  // executor would start it with. Otherwise it starts with the first model request: a chat's
  // (a person takes longer to type than a shell to start), and one after SessionStart hooks,
  // which may set up the workspace (a clone into it, which the sandbox's .troupe and .claude,
  // made when it starts, would find not empty) and take longer than the shell anyway.
  auto session_start_hooks =
    std::any_of(settings.hook_commands.begin(), settings.hook_commands.end(),
                [](const hook_command& h) { return h.event == hook_event::session_start; });
  if (tools.start_shell_early && !settings.interactive && !session_start_hooks &&
      registry->find("shell"))
    tools.started_shell = std::make_shared<shell_ahead>(tools, random_hex(16));

  session_config session;
  session.session_id = settings.session_id;
  session.session_dir = paths.dir();
  session.model_name = settings.model_name;
  session.system_prompt = main_system_prompt(settings, registry, settings.format, commons);
  if (settings.instructions)
    session.memory_files = settings.instructions->files;
  session.subagent_types = settings.subagent_types;
  session.format = settings.format;
  session.cwd = settings.cwd;
  session.registry = registry;
  session.budget = settings.budget;
  session.max_steps = settings.max_steps;
  session.max_cost_usd = settings.max_cost_usd;
  session.fallback_model = settings.fallback_model;
  session.max_parallel_tools = settings.max_parallel_tools;
  session.history = std::move(settings.history);
  session.resumed_state = settings.resumed_state;
  session.info = settings.info;
  session.past_agents = agents_of(paths);
  if (!settings.prompt.empty())
    session.initial_inputs.push_back(make_input(std::move(settings.prompt)));
  session.permissions = std::make_shared<const permission_policy>(settings.permissions);
  session.asker = std::move(asker);
  session.max_depth = settings.max_agent_depth;
  session.max_children = settings.max_agents;
  session.stop_children_on_end = !settings.let_agents_finish;
  // A stream-json client's session goes on after a turn's error or cap, as a chat's does,
  // and reports every turn.
  session.interactive = settings.interactive || settings.stream_input;
  session.report_turns = settings.stream_input;
  session.hook_callbacks = settings.hook_callbacks;
  session.wait_for_notifications = settings.wait_notifications;
  session.idle_timeout = settings.idle_timeout;
  session.disk = commons ? commons->disk : spawn_disk_io(sys, settings.max_notification_bytes);
  session.keep_state_files_open = commons == nullptr;
  session.sync_transcript_at_end = commons == nullptr;
  session.hook_commands = settings.hook_commands;
  session.hook_shell = settings.shell_program;
  session.events_shown = commons == nullptr; // a fleet's tasks are counted, not shown
  session.process_environment = std::move(environment);

  launched_agent launched;
  launched.session_dir = paths.dir();
  std::optional<http_engine> engine;
  model_client_actor model;
  if (settings.http_model) {
    if (auto usable = http_engine::check_libcurl_for(settings.http_model->provider.base_url,
                                                     settings.libcurl);
        !usable)
      return failure{usable.error()};
    if (commons && commons->engine) {
      engine = commons->engine;
    } else {
      auto started = http_engine::start(sys, settings.libcurl);
      if (!started)
        return failure{started.error()};
      engine = std::move(*started);
      if (commons)
        commons->engine = engine;
    }
    // The reply may take what the context budget keeps free for it.
    settings.http_model->provider.max_tokens =
      static_cast<int32_t>(settings.budget.output_reserve());
  }
  // The MCP servers start now, while the session is being set up; the first model request
  // waits for them at most MCP_TIMEOUT (execute_run, the chat).
  if (!settings.mcp && !settings.mcp_servers.empty()) {
    auto started = start_mcp_servers(sys, settings, engine);
    if (!started)
      return failure{started.error()};
  }
  if (settings.mcp) {
    auto mine = settings.mcp->attach(sys, settings.session_id);
    session.mcp_servers = std::move(mine.servers);
    session.owned_mcp_servers = std::move(mine.owned);
  }
  auto setup = std::make_shared<subagent_setup>();
  setup->registry = registry;
  setup->permissions = session.permissions;
  setup->engine = engine;
  setup->disk = session.disk;
  // A client that answers permission questions answers its subagents' too (the Agent SDK's
  // canUseTool sees every call); a terminal's person is asked for the main agent only.
  if (settings.ask_client)
    setup->asker = session.asker;
  setup->instructions = settings.instructions;
  setup->types = settings.subagent_types;
  for (auto format : {tool_format::tool, tool_format::markdown, tool_format::xml})
    setup->child_prompts.at(static_cast<size_t>(format)) =
      system_prompt_for(registry, format, default_instructions, settings.instructions,
                        subagent_note, commons);
  {
    run_settings shared = settings;
    shared.history.clear();
    shared.prompt.clear();
    setup->settings = std::move(shared);
  }
  // The factory holds the setup weakly: the setup holds the factory.
  std::weak_ptr<subagent_setup> weak = setup;
  setup->factory = [weak](caf::actor_system& system, const subagent_launch& launch,
                          agent_parent_actor parent) -> expected<session_actor> {
    auto shared = weak.lock();
    if (!shared)
      return failure{"the run is ending"};
    return spawn_subagent(system, shared, launch, std::move(parent));
  };
  session.spawn_subagent = setup->factory;
  session.switch_model = [weak, registry](caf::actor_system& system,
                                          const std::string& requested) -> expected<model_switch> {
    // Recorded absolute, as --model is, so that a resume finds the script from anywhere.
    std::error_code cwd_ec;
    auto spec = anchored_model_spec(requested, std::filesystem::current_path(cwd_ec));
    auto shared = weak.lock();
    if (!shared)
      return failure{"the run is ending"};
    auto& run = shared->settings;
    auto choice = run.resolve_model ? run.resolve_model(spec)
                                    : expected<model_choice>{failure{"no model resolver"}};
    if (!choice)
      return failure{choice.error()};
    auto budget = run.resolve_budget ? run.resolve_budget(spec)
                                     : expected<context_budget>{run.budget};
    if (!budget)
      return failure{budget.error()};
    model_switch next;
    next.model_name = spec;
    next.format = choice->format;
    next.system_prompt = main_system_prompt(run, registry, choice->format, nullptr);
    next.budget = *budget;
    if (choice->http_model) {
      if (auto started = ensure_engine(system, *shared); !started)
        return failure{started.error()};
      choice->http_model->provider.max_tokens = static_cast<int32_t>(budget->output_reserve());
      next.client = spawn_http_model(system, std::move(*choice->http_model), *shared->engine);
    } else {
      next.client = spawn_scripted_model(system, std::move(*choice->model_script));
    }
    return next;
  };
  // A chat with an API model has the model name it (one short request on the side); headless
  // runs and scripted models take the prompt's first words, with no request.
  if (commons) {
    // Named from its prompt when it ends; no namer actor per task.
  } else if (settings.interactive && settings.http_model && engine) {
    auto naming = *settings.http_model;
    naming.provider.max_tokens = 32;
    naming.provider.stream = false;
    session.namer = spawn_namer(sys, spawn_http_model(sys, std::move(naming), *engine));
    session.namer_uses_model = true;
  } else {
    session.namer = spawn_namer(sys, model_client_actor{});
  }
  if (settings.http_model)
    model = spawn_http_model(sys, std::move(*settings.http_model), *engine);
  else
    model = spawn_scripted_model(sys, std::move(*settings.model_script));
  launched.agent = spawn_agent(sys, std::move(session), std::move(tools), std::move(model));
  // A fleet's engine is the fleet's to stop; the setup stays alive with the agent all the same.
  launched.watch_subagents = [weak](event_sink_actor sink) {
    if (auto shared = weak.lock())
      shared->watchers.push_back(std::move(sink));
  };
  launched.stop_engine = [setup, shared = commons != nullptr, mcp = settings.mcp] {
    // A fleet's MCP servers, like its engine, are the fleet's to stop.
    if (mcp && !shared)
      mcp->stop();
    if (setup->engine && (!shared || setup->own_engine))
      setup->engine->stop();
  };
  if (commons)
    return launched;
  // Other processes reach the session here (`troupe notify`, `interrupt`, `background`).
  if (auto endpoint = spawn_control_endpoint(sys, launched.agent, paths); !endpoint)
    spdlog::warn("{}; troupe notify will queue messages for the next resume", endpoint.error());
  return launched;
}

/// How long the exit may wait for threads after a signal ended the run.
constexpr std::chrono::milliseconds shutdown_after_signal{750};
/// How long a session told twice to stop may take to end before it is told a third time, and
/// twice this before it is killed: ending takes milliseconds (its SessionEnd hooks are not
/// waited for); one still running is stuck.
constexpr std::chrono::milliseconds second_interrupt_grace{250};
/// The same after an end without a signal: enough for the disk work of a normal end.
constexpr std::chrono::milliseconds shutdown_after_end{3000};

void warn_without_subreaper(const process_reaper& reaper) {
  if (!reaper.subreaper())
    spdlog::warn("cannot become a child subreaper ({}): processes that tools detach from "
                 "their session (setsid, nohup, a double fork) are stopped only while they "
                 "still carry TROUPE_PROCESS_OWNER",
                 std::strerror(reaper.subreaper_error()));
}

namespace {

// --no-session-persistence: the session's directory goes once every actor is done with it
// (declared before the actor system, so destroyed after it). A run killed before leaves it
// marked in session.json ("persist": false) for `troupe ls` to remove.
class unkept_session {
public:
  explicit unkept_session(std::filesystem::path dir) : dir_(std::move(dir)) {}
  unkept_session(const unkept_session&) = delete;
  unkept_session& operator=(const unkept_session&) = delete;
  ~unkept_session() {
    if (dir_.empty())
      return;
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    if (ec)
      spdlog::warn("cannot remove the session's directory {} (--no-session-persistence): {}",
                   dir_.string(), ec.message());
  }

private:
  std::filesystem::path dir_;
};

} // namespace

int execute_run(run_settings settings, std::FILE* out, std::function<void()> before_forced_exit) {
  block_termination_signals();
  unkept_session unkept{settings.info.persist ? std::filesystem::path{}
                        : settings.session_dir.empty()
                          ? session_paths::top_level(settings.troupe_home, settings.session_id).dir()
                          : settings.session_dir};
  if (settings.http_model)
    http_engine::warm_up(settings.libcurl, settings.http_model->provider.base_url);
  // Outlives the actor system: once every session has ended, what their tools left goes too.
  process_reaper reaper;
  warn_without_subreaper(reaper);
  caf::actor_system_config cfg;
  configure_actor_system(cfg);
  caf::actor_system sys{cfg};
  permission_asker_actor asker;
  if (settings.ask_on_terminal && !settings.stream_input)
    asker = spawn_terminal_asker(sys);
  // A stream-json client: its initialize request (the first line, when it is one) shapes the
  // launch; the rest of stdin is read once the session exists.
  std::optional<client_run> client;
  if (settings.stream_input) {
    auto opened = open_client(sys, settings, out);
    if (!opened && opened.error() == client_interrupted)
      return exit_code_for(terminal_reason::interrupted);
    if (!opened) {
      std::fprintf(stderr, "troupe: %s\n", opened.error().c_str());
      return 2;
    }
    client = std::move(*opened);
    if (settings.ask_client)
      asker = caf::actor_cast<permission_asker_actor>(client->actor);
  }
  if (client) {
    // The client's servers — those its initialize names, and its own (the Agent SDK's
    // createSdkMcpServer) — over any of the same name.
    auto servers = client->mcp_servers;
    for (auto& name : client->sdk_mcp_servers) {
      mcp_server_config server;
      server.name = name;
      server.transport = mcp_transport::sdk;
      server.source = "the client's initialize (sdkMcpServers)";
      servers.push_back(std::move(server));
    }
    for (auto& server : servers) {
      auto same = [&](const mcp_server_config& s) { return s.name == server.name; };
      settings.mcp_servers.erase(
        std::remove_if(settings.mcp_servers.begin(), settings.mcp_servers.end(), same),
        settings.mcp_servers.end());
      settings.mcp_servers.push_back(std::move(server));
    }
  }
  auto launched = launch_agent(sys, settings, asker);
  if (!launched) {
    std::fprintf(stderr, "troupe: %s\n", launched.error().c_str());
    return 2;
  }
  auto agent = launched->agent;
  if (client) {
    if (settings.mcp)
      for (auto& [name, server] : settings.mcp->shared())
        caf::anon_send(client->actor, mcp_atom::value, name, server);
    read_client_input(*client);
  }
  await_mcp_servers(sys, settings);

  // Shared with the renderer's thread, which may still be inside set_value when we return.
  auto ended = std::make_shared<std::promise<session_ended_event>>();
  auto ended_future = ended->get_future();
  settings.render.colour = settings.render.format == output_format::text && out == stdout &&
                           colour_wanted(STDOUT_FILENO);
  auto sink = stream_sink(out, [ended](const session_ended_event& e) { ended->set_value(e); });
  // The last turn's result decides a client run's exit status, as Claude Code's does.
  auto last_turn = std::make_shared<std::atomic<int>>(-1);
  if (client) {
    sink.write = [writer = client->writer](std::string_view text) {
      if (!text.empty() && text.back() == '\n')
        text.remove_suffix(1);
      return writer->write(text);
    };
    sink.on_turn = [last_turn](const session_ended_event& e) {
      last_turn->store(exit_code_for(e.reason));
    };
  }
  auto renderer = spawn_renderer(sys, settings.render, std::move(sink), agent);
  if (client)
    launched->watch_subagents(renderer);

  std::atomic<int> signals_seen{0};
  std::atomic<int64_t> second_signal_at{0}; // steady clock, ns
  signal_forwarder forwarder{[&](int sig) {
    if (sig == SIGWINCH)
      return; // a resized terminal is no reason to stop
    if (signals_seen.fetch_add(1) == 0) {
      spdlog::info("signal {}: interrupting the run", sig);
      // A client's session would wait for its next message after the interrupted turn: the
      // signal ends the run, as it ends any other.
      if (client)
        caf::anon_send(agent, control_atom::value, control_command::end_input, std::string{});
      caf::anon_send<caf::message_priority::high>(agent, interrupt_atom::value);
    } else if (second_signal_at.load() == 0) {
      // Told once more: an interrupt also ends the session's wait for its SessionEnd hooks, so a
      // session that is only ending ends now, with its whole result; so does one whose first
      // interrupt is still on its way (one Ctrl+C often arrives twice, forwarded again by a
      // wrapper). One that has not ended shortly after is stuck, and is killed (below).
      second_signal_at.store(std::chrono::steady_clock::now().time_since_epoch().count());
      caf::anon_send<caf::message_priority::high>(agent, interrupt_atom::value);
    }
  }};
  // Both from this thread, so the subscription is in place before the first event.
  caf::anon_send(agent, subscribe_atom::value, renderer);
  caf::anon_send(agent, start_atom::value);
  if (client)
    start_client(*client, agent, settings.session_id);

  using namespace std::chrono_literals;
  int code = -1;
  bool told_again = false;
  bool killed = false;
  while (code < 0) {
    if (ended_future.wait_for(50ms) == std::future_status::ready) {
      auto end = ended_future.get();
      code = exit_code_for(end.reason);
      if (client && end.reason == terminal_reason::completed && last_turn->load() > 0)
        code = 1; // the last turn's result was an error
      else if (client && end.reason == terminal_reason::completed)
        code = 0;
      if ((settings.claude_exit_codes || client) && code != 0)
        code = 1;
      if (signals_seen.load() > 0 && end.reason != terminal_reason::completed)
        code = exit_code_for(terminal_reason::interrupted); // 130: a signal stopped it
      else if (client && signals_seen.load() > 0)
        code = exit_code_for(terminal_reason::interrupted);
    } else if (auto second = second_signal_at.load(); second != 0 && !killed) {
      auto since = std::chrono::steady_clock::now().time_since_epoch() -
                   std::chrono::steady_clock::duration{second};
      if (since < second_interrupt_grace)
        continue;
      if (!told_again) {
        // Once more: a second signal that came while the interrupted step was still winding
        // down found nothing to stop, and its session may be waiting for a SessionEnd hook now.
        caf::anon_send<caf::message_priority::high>(agent, interrupt_atom::value);
        told_again = true;
        continue;
      }
      if (since < 2 * second_interrupt_grace)
        continue;
      caf::anon_send_exit(agent, caf::exit_reason::kill);
      killed = true;
      // The renderer reports the kill (its result line) at once: given a moment to, so that
      // the run still ends with it.
      if (ended_future.wait_for(500ms) == std::future_status::ready)
        continue;
      std::fprintf(stderr, "troupe: interrupted twice, stopped without finishing the run\n");
      sys.await_actors_before_shutdown(false);
      code = exit_code_for(terminal_reason::interrupted);
    }
  }
  launched->stop_engine();
  if (client) // its requests have nobody left to answer; stdin's reader thread just stops
    caf::anon_send_exit(client->actor, caf::exit_reason::user_shutdown);
  // Scans stop early when their call is cancelled; the exit does not wait for one that cannot
  // be cut (an interrupt from another process ends a run as a signal does).
  exit_if_still_running_after(signals_seen.load() > 0 ? shutdown_after_signal : shutdown_after_end,
                              code, out, std::move(before_forced_exit));
  return code;
}

void warn_of_load_problems(const loaded_session& loaded) {
  if (!loaded.repair_note.empty())
    spdlog::warn("{}", loaded.repair_note);
  if (!loaded.state_problem.empty())
    spdlog::warn("{}; counters restart from zero", loaded.state_problem);
}

} // namespace troupe
