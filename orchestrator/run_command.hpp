#pragma once
// `troupe run` and `troupe demo` once their input is checked: one agent to its terminal state.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "actors/http_engine.hpp"
#include "actors/http_model.hpp"
#include "store/notification_queue.hpp"
#include "actors/session.hpp"
#include "context/token_budget.hpp"
#include "orchestrator/mcp_connections.hpp"
#include "orchestrator/project_files.hpp"
#include "orchestrator/renderer.hpp"
#include "protocol/agent_type.hpp"
#include "protocol/hooks.hpp"
#include "protocol/loop_state.hpp"
#include "protocol/message.hpp"
#include "protocol/session_info.hpp"
#include "providers/scripted_script.hpp"
#include "tools/mcp_wire.hpp"
#include "tools/permissions.hpp"
#include "tools/process_reaper.hpp"
#include "tools/registry.hpp"
#include "tools/sandbox.hpp"
#include "tools/tool_spec.hpp"

namespace caf {
class actor_system;
}

namespace troupe {

struct loaded_session;

/// A model as resolved from a spec: exactly one of the two is set.
struct model_choice {
  std::optional<script> model_script;
  std::optional<http_model_config> http_model;
  tool_format format = tool_format::markdown;
};

/// Resolves a model spec ("openai/…", "scripted:PATH", …) the way --model is resolved.
using model_resolver = std::function<expected<model_choice>(const std::string& spec)>;

/// What the agents of one fleet share, made once for all of them: the HTTP engine, the disk
/// actor, and one tool registry and system prompt per permission set (ten thousand agents hold
/// one copy each, not ten thousand). Used from the fleet dispatcher's thread only.
struct agent_commons {
  std::optional<http_engine> engine;
  disk_io_actor disk;
  std::shared_ptr<const tool_registry> builtin;
  std::map<std::string, std::shared_ptr<const tool_registry>> registries;
  std::map<std::string, shared_value<std::string>> prompts;
};

/// A checked run: every value here is known to be usable.
struct run_settings {
  std::string prompt;
  /// As the user wrote it, e.g. "scripted:examples/demo/script.jsonl" or "openai/gpt-4.1".
  std::string model_name;
  /// Exactly one of these is set: the scripted provider's script, or an HTTP provider.
  std::optional<script> model_script;
  std::optional<http_model_config> http_model;
  tool_format format = tool_format::markdown;
  int32_t max_steps = 0;
  size_t max_parallel_tools = 10;
  size_t max_tool_output = default_output_cap;
  /// The largest notification text the session's queue readers take (longer ones are set aside).
  size_t max_notification_bytes = notification_size_cap;
  /// The model's context window and output size (table, settings, flags).
  context_budget budget;
  std::filesystem::path cwd;
  std::filesystem::path troupe_home;
  std::filesystem::path home;
  /// Absolute path of the bash the shell tool runs.
  std::string shell_program = "/bin/bash";
  /// A shell idle this long is stopped (0: never; fleets set it).
  std::chrono::milliseconds shell_idle_stop{0};
  /// The libcurl to load for HTTP models ($TROUPE_LIBCURL, else libcurl.so.4).
  std::string libcurl = "libcurl.so.4";
  std::string session_id;
  /// The session's directory when it is not $TROUPE_HOME/sessions/<id> (a fleet's task).
  std::filesystem::path session_dir;
  /// What session.json starts from (name, creation time, fork origin, cost so far).
  session_info info;
  /// The model a resumed session ran with: used when --model names none.
  std::string recorded_model;
  /// A person drives the session (troupe chat).
  bool interactive = false;
  /// --fork: the session copied into this one once the run has been checked.
  std::filesystem::path fork_source;
  /// This process's hold on the session (see session_lock), kept for the whole run.
  std::shared_ptr<void> session_lock;
  /// The session's directory did not exist before this run.
  bool created_session_dir = false;
  /// Messages of an existing session with this id (empty for a new one).
  std::vector<message> history;
  /// The loop state that session left behind, when state.json could be read.
  std::optional<loop_state> resumed_state;
  render_options render;
  /// External hook commands from the settings files, user, project and --settings in turn.
  std::vector<hook_command> hook_commands;
  /// What tool calls may run; the rules' bare denials are already out of the registry.
  permission_policy permissions;
  /// The walls asked for (--sandbox, settings, the default).
  sandbox_settings sandbox;
  /// The session's walls, made at launch and shared with its subagents (one private /tmp).
  std::shared_ptr<const sandbox_policy> sandbox_walls;
  /// Ask the person at the terminal about "ask" decisions (stdin and stderr are terminals).
  bool ask_on_terminal = false;
  /// For subagents launched with a model of their own, and for /model.
  model_resolver resolve_model;
  /// The context budget of another model (the table, settings files, flags), for /model.
  std::function<expected<context_budget>(const std::string& model)> resolve_budget;
  /// More system instructions after troupe's own and the project's (a fleet task's "system",
  /// --append-system-prompt): the main agent's, not its subagents'.
  std::string extra_system;
  /// Which project files are read for the workspace (a fleet task's own cwd too): its
  /// instructions unless --bare or "projectInstructions": false, its subagent types unless
  /// --bare.
  bool read_instructions = true;
  bool read_agent_types = true;
  /// The workspace's instructions (CLAUDE.md, AGENTS.md, …) for the system prompt; null: none.
  std::shared_ptr<const project_instructions> instructions;
  /// The workspace's custom subagent types (.claude/agents/*.md, …); null: none.
  std::shared_ptr<const agent_types> subagent_types;
  /// A stream-json client drives the session (--input-format stream-json): stdin is read as it
  /// arrives, a result goes out per turn, and the session ends when stdin does.
  bool stream_input = false;
  /// --permission-prompt-tool stdio: calls that need permission are asked of that client.
  bool ask_client = false;
  /// Exit as Claude Code does: 0 after a success, 1 after any error result (130 when a signal
  /// stopped the run); set for Claude Code's command line and a stream-json client.
  bool claude_exit_codes = false;
  /// Calls the client's hook callbacks (its initialize request's hooks).
  hook_callback_actor hook_callbacks;
  /// Instructions in place of troupe's own (--system-prompt); the tool-format instructions of
  /// the text formats stay. Subagents keep troupe's.
  std::optional<std::string> custom_instructions;
  /// The model a step switches to when the main one fails overloaded (--fallback-model).
  std::string fallback_model;
  /// The run ends (max_budget) once its cost reaches this many US dollars; 0: no cap.
  double max_cost_usd = 0;
  /// Set for a fleet's task: the parts shared with the other tasks. The task's session then has
  /// no control endpoint of its own (a descriptor and a socket per task would not scale; troupe
  /// notify queues for it durably), no namer (named from its prompt), and nobody is warned per
  /// task of the permission mode.
  std::shared_ptr<agent_commons> commons;
  int32_t max_agent_depth = default_agent_depth;
  size_t max_agents = default_max_agents;
  /// Background subagents still running when the run ends are left to finish (the process
  /// waits for them) instead of being stopped.
  bool let_agents_finish = false;
  /// Stay alive waiting for notifications when the queue is empty; end `completed` after
  /// `idle_timeout` without any (0: never).
  bool wait_notifications = false;
  std::chrono::milliseconds idle_timeout{0};
  /// The MCP servers configured for the run (settings files, approved .mcp.json servers,
  /// --mcp-config), checked.
  std::vector<mcp_server_config> mcp_servers;
  /// Their actors, started by the launch (or once by a fleet for all its tasks), shared by the
  /// run's subagents; null: none started yet.
  std::shared_ptr<mcp_connections> mcp;
  /// The stream-json client the servers of transport "sdk" live in.
  stream_client_actor mcp_client;
};

/// An agent spawned from checked settings, not started yet (send start_atom).
struct launched_agent {
  session_actor agent;
  std::filesystem::path session_dir;
  /// Stops the HTTP engine, if one was started (for the model, a subagent's or a /model
  /// switch); call it once the agent has ended. It also keeps what the agent's subagent factory
  /// and model switcher refer to alive until then.
  std::function<void()> stop_engine;
  /// Subscribes a sink to the messages of every subagent the run launches from now on (a
  /// stream-json client reads them with their parent_tool_use_id). Call before start.
  std::function<void(event_sink_actor)> watch_subagents;
};

/// Spawns the agent `settings` describe — its tools, model, session, subagent factory and
/// control endpoint — with `asker` answering permission questions (none: headless). Consumes
/// the settings' history and prompt.
expected<launched_agent> launch_agent(caf::actor_system& sys, run_settings& settings,
                                      permission_asker_actor asker);

/// Starts the actors of the run's process-wide MCP servers (settings.mcp), with `engine` for
/// those over HTTP (else the fleet's, else one of their own). The error names a bad
/// MCP_TIMEOUT or MCP_TOOL_TIMEOUT.
expected<bool> start_mcp_servers(caf::actor_system& sys, run_settings& settings,
                                 std::optional<http_engine> engine);

/// Waits (at most MCP_TIMEOUT from their start) for the run's MCP servers, warns on stderr of
/// each that failed, and lists them in stream-json's system/init.
void await_mcp_servers(caf::actor_system& sys, run_settings& settings);

/// Logs a warning when `reaper` could not make this process a child subreaper.
void warn_without_subreaper(const process_reaper& reaper);

/// Runs one agent to its terminal state, printing its events to `out`. SIGINT interrupts the
/// run (a second one stops it at once). Returns the exit code of the terminal state.
/// `before_forced_exit` runs if the process has to end before execute_run returns (a tool that
/// cannot be stopped holds the actor system up): the caller's clean-up that would otherwise
/// never come.
int execute_run(run_settings settings, std::FILE* out,
                std::function<void()> before_forced_exit = {});

/// Logs what loading a session to run it again repaired in its transcript, and why its
/// counters restart (a state.json that cannot be read).
void warn_of_load_problems(const loaded_session& loaded);

} // namespace troupe
