#pragma once
// The session actor: one agent's conversation, prompt queue, loop state and hooks.
// It never waits on anything; the step actor does the waiting.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/agent_supervisor.hpp"
#include "context/token_budget.hpp"
#include "protocol/expected.hpp"
#include "protocol/hooks.hpp"
#include "protocol/interfaces.hpp"
#include "protocol/session_info.hpp"
#include "store/session_paths.hpp"
#include "tools/permissions.hpp"
#include "tools/registry.hpp"
#include "tools/tool_parser.hpp"

namespace caf {
class actor_system;
}

namespace troupe {

struct session_config;

/// A model to switch to (/model): its client and what the session and its step need to use it.
struct model_switch {
  model_client_actor client;
  std::string model_name;
  tool_format format = tool_format::markdown;
  shared_value<std::string> system_prompt;
  context_budget budget;
};

/// Resolves and spawns a model for /model. An error is a message for the user.
using model_switcher =
  std::function<expected<model_switch>(caf::actor_system&, const std::string& spec)>;

/// Everything a session is set up with.
struct session_config {
  std::string session_id;
  /// Its directory: $TROUPE_HOME/sessions/<id>, a subagent's under its parent's agents/.
  std::filesystem::path session_dir;
  /// The files in it.
  session_paths paths() const { return session_paths{session_dir}; }
  std::string model_name;
  /// Shared: the thousand subagents of one fan-out hold one prompt.
  shared_value<std::string> system_prompt;
  std::filesystem::path cwd;
  std::shared_ptr<const tool_registry> registry;
  /// The MCP servers whose tools the agent offers, by their names in the configuration; its
  /// subagents inherit them. Empty: none.
  std::map<std::string, mcp_server_actor> mcp_servers;
  /// Those of them that are this agent's own (scope "agent"): stopped with its tool executor.
  std::vector<mcp_server_actor> owned_mcp_servers;
  /// How tools are offered to the model and read back (markdown blocks are parsed only then).
  tool_format format = tool_format::markdown;
  /// The model's window and output size: when to elide old tool results and to compact.
  context_budget budget;
  /// Steps per turn; 0 means no cap.
  int32_t max_steps = 0;
  /// No step starts once this run's cost (its subagents' included) reaches this many US
  /// dollars: the session ends max_budget. 0: no cap.
  double max_cost_usd = 0;
  /// The model (a spec for switch_model) a failed step goes on with once, when the model failed
  /// overloaded or rate-limited after its retries; empty: none.
  std::string fallback_model;
  /// Most read-only calls of one reply that run at once (1: every call in turn).
  size_t max_parallel_tools = 10;
  /// Decides every tool call; null: every call runs.
  std::shared_ptr<const permission_policy> permissions;
  /// Answers "ask" decisions; null (headless): an ask is a denial.
  permission_asker_actor asker;
  /// A person drives the session (chat): it waits for input when the queue is empty, a step
  /// cap, a declined call or an interrupt hands control back instead of ending the run, and an
  /// interrupt while idle clears the queue.
  bool interactive = false;
  /// A subagent: the id of the `task` call that launched it (its message events carry it).
  std::string parent_tool_use_id;
  /// Calls the client's hook callbacks (hook_commands with a callback_id).
  hook_callback_actor hook_callbacks;
  /// Driven by a stream-json client (`--input-format stream-json`): every turn's end is
  /// published (turn_ended_event), and the session ends once the client said its input is over
  /// (control end-input) and the queue is done. Set with `interactive`, which keeps the
  /// session going after a turn's error, step cap or refusal.
  bool report_turns = false;
  /// A headless session that stays alive for task notifications when its queue is empty
  /// (`--wait-notifications`); the terminal states stay those of a non-interactive run.
  bool wait_for_notifications = false;
  /// Most inputs the prompt queue holds; past it inputs are dropped with a notice.
  size_t queue_cap = 100;
  /// News that arrives while idle within this long of the last turn news started waits this
  /// long for more, so that a burst of notifications is one turn; 0: every one at once.
  std::chrono::milliseconds news_window{50};
  /// Results of notifications logged together beyond this many bytes are summary lines.
  size_t notification_budget = default_notification_budget;
  hook_list hooks;
  /// Messages of an earlier run of this session (from its transcript).
  std::vector<message> history;
  /// The loop state that run left in state.json, if it could be read.
  std::optional<loop_state> resumed_state;
  /// Inputs queued before the session starts, in order (the initial prompts).
  std::vector<message> initial_inputs;
  /// Subscribers known from the start (more can subscribe later).
  std::vector<event_sink_actor> subscribers;
  /// Launches subagents for the task tool; unset: the tool answers that none are available.
  subagent_factory spawn_subagent;
  /// The custom subagent types the task tool's `subagent_type` may name; null: none.
  std::shared_ptr<const agent_types> subagent_types;
  /// The instruction files read into its system prompt (the init event lists them).
  std::vector<std::string> memory_files;
  /// Switches the model for /model; unset: /model says it cannot.
  model_switcher switch_model;
  /// A front end shows this session's events to a person (`run`, `chat`; not a subagent, not
  /// a fleet's task): what they show (a failed hook) is logged below warn, so it is read once.
  bool events_shown = false;
  /// External hook commands (settings "hooks"); bash (`hook_shell`) runs them in `cwd`.
  std::vector<hook_command> hook_commands;
  std::string hook_shell = "/bin/bash";
  /// Variables this session's processes (its tools' and its hooks') get over troupe's own:
  /// TROUPE_SESSION_ID (this session's id), TROUPE_HOME, TROUPE_BIN. spawn_agent hands them to
  /// the tool executor; nothing sets them on the process.
  std::map<std::string, std::string> process_environment;
  /// Names the session after its first reply, off the loop; unset: named from the first prompt
  /// when it ends.
  namer_actor namer;
  /// The namer asks a model (its names are the model's, not the prompt's words).
  bool namer_uses_model = false;
  /// 0 for a top-level session, its parent's + 1 for a subagent.
  int32_t depth = 0;
  /// Deepest subagent nesting allowed, and most subagents running at once per session.
  int32_t max_depth = default_agent_depth;
  size_t max_children = default_max_agents;
  /// A subagent's parent (its supervisor): told when this session ends.
  agent_parent_actor parent;
  /// The parent's durable queue, written instead when the parent has ended meanwhile.
  std::filesystem::path parent_queue;
  /// When this session ends, its background subagents are stopped (default) or left to finish
  /// (their notifications then go to this session's durable queue).
  bool stop_children_on_end = true;
  /// An interactive session (or one waiting for notifications) ends `completed` after this
  /// long with nothing to do; 0: it waits for ever.
  std::chrono::milliseconds idle_timeout{0};
  /// What session.json starts from: the name, creation time and fork origin of a resumed or
  /// forked session (the session fills in the rest).
  session_info info;
  /// A subagent's description (what its parent launched it for), carried in its notifications.
  std::string description;
  /// The subagents an earlier run of this session launched (their session.json under agents/):
  /// /agents lists them, and their ids can be resumed.
  std::vector<session_info> past_agents;
  /// state.json and session.json stay open between writes (one descriptor each); a fleet's
  /// tasks open them per write instead, so a running agent holds one descriptor, its transcript.
  bool keep_state_files_open = true;
  /// At its end the transcript is fsynced (on the disk actor). A fleet's tasks leave that to
  /// the fleet, which syncs its whole file system once at its end instead of once per task.
  bool sync_transcript_at_end = true;
  /// Does the blocking file work (durable queues, fsync); shared by the sessions of a process.
  /// Unset: spawn_agent starts one for this agent.
  disk_io_actor disk;
};

/// Spawns a session and its step actor. The session drives `model` and `executor` through
/// the step and takes them down when it ends. Send start_atom to begin.
session_actor spawn_session(caf::actor_system& sys, session_config config,
                            model_client_actor model, tool_executor_actor executor);

/// Returns a user message with the given text and origin, ready to submit.
message make_input(std::string text, message_origin origin = message_origin::prompt);

} // namespace troupe
