#pragma once
// The step actor: one model call, then the reply's tool calls in order. It does the waiting,
// so the session never blocks and an interrupt reaches it mid-step.

#include <map>
#include <memory>
#include <string>

#include "protocol/interfaces.hpp"
#include "tools/permissions.hpp"
#include "tools/registry.hpp"
#include "tools/tool_parser.hpp"

namespace caf {
class actor_system;
}

namespace troupe {

/// What a step actor needs besides its peers.
struct step_config {
  shared_value<std::string> system_prompt;
  std::shared_ptr<const tool_registry> registry;
  /// Native calls always run; calls written in the text run only in the markdown/xml formats.
  tool_format format = tool_format::markdown;
  /// Most read-only calls of one reply that run at once.
  size_t max_parallel_calls = 10;
  /// Decides every call; null: every call runs (tests, benchmarks, trusted embeddings).
  std::shared_ptr<const permission_policy> permissions;
  /// Who answers "ask" decisions; null (headless): an ask is a denial.
  permission_asker_actor asker;
  /// The session's external hooks; PreToolUse runs before each call that may run (calls then
  /// go one at a time), PostToolUse after each result.
  hook_runner_actor hooks;
  bool pre_tool_hooks = false;
  bool post_tool_hooks = false;
  /// Carries out the agent tools (task, task_wait; task_output and task_stop on an agent id);
  /// null: they answer that no subagents are available.
  agent_supervisor_actor agents;
  /// The MCP servers the agent uses: the step subscribes to each, offers their tools (as
  /// mcp__<server>__<tool>) beside the registry's, and keeps up with their changes.
  std::map<std::string, mcp_server_actor> mcp_servers;
};

/// Spawns the step actor of one session. It reports each reply to `session` before running
/// the reply's tools.
step_actor spawn_step(caf::actor_system& sys, step_config config, session_actor session,
                      model_client_actor model, tool_executor_actor executor);

} // namespace troupe
