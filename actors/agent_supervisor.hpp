#pragma once
// The agent supervisor: owns the child agents one owner (a parent session) launches. A fleet's
// tasks are top-level sessions on the fleet dispatcher instead (actors/fleet_dispatcher). See agent_supervisor_actor in protocol/interfaces.hpp for what it answers.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "protocol/agent_type.hpp"
#include "protocol/expected.hpp"
#include "protocol/interfaces.hpp"
#include "protocol/session_info.hpp"
#include "store/session_paths.hpp"
#include "tools/registry.hpp"

namespace caf {
class actor_system;
class error;
} // namespace caf

namespace troupe {

/// What an owner asks for when its model calls the task tool.
struct subagent_launch {
  std::string agent_id;
  std::string prompt;
  std::string description;
  /// A model spec ("openai/…", "scripted:PATH"); empty: the parent's.
  std::string model;
  /// Steps per turn; 0: the parent's cap.
  int32_t max_steps = 0;
  /// The tools it may use; empty: all of the parent's.
  std::vector<std::string> tools;
  /// <parent's session dir>/agents/<agent id>: its transcript and state live here.
  std::filesystem::path session_dir;
  int32_t depth = 1;
  /// Continue an agent that ended: its transcript is loaded first.
  bool resume = false;
  /// Prompts sent to it (task with `resume`) before it was spawned: its next jobs, in order.
  std::vector<std::string> follow_ups;
  /// The `task` call that launched (or resumed) it.
  std::string call_id;
  /// The custom type it runs as (`subagent_type`, checked against the supervisor's types);
  /// empty: troupe's own subagent (or, resumed, the type it ran as).
  std::string agent_type;
};

/// Deepest subagent nesting and most subagents running at once per session, unless
/// --max-agent-depth / --max-agents (or their variables) say otherwise.
inline constexpr int32_t default_agent_depth = 3;
inline constexpr size_t default_max_agents = 20;
/// The most agents running at once that --max-agents may ask for.
inline constexpr size_t max_agents_cap = 1000;

/// Builds and spawns a subagent's session (not started) that reports its end to `parent`. The
/// orchestrator provides it: it knows how to make model clients and tool contexts. An error is
/// a message for the model.
using subagent_factory = std::function<expected<session_actor>(
  caf::actor_system&, const subagent_launch&, agent_parent_actor parent)>;

/// Results of agents that end together beyond this many bytes are announced by a summary line
/// each; the whole result stays readable with task_output.
inline constexpr size_t default_notification_budget = 32 * 1024;

struct agent_supervisor_config {
  /// The owner's id, for messages ("no running agent X in session Y").
  std::string owner_id;
  /// The owner's directory: each agent's is under its agents/, named by the agent's id; ends
  /// the owner can no longer take are written to its durable queue.
  session_paths owner_dir;
  /// The owner's tools: the task tool's input is checked against its spec.
  std::shared_ptr<const tool_registry> registry;
  /// The owner's depth (0: top level), the deepest nesting allowed, and most agents at once.
  int32_t depth = 0;
  int32_t max_depth = default_agent_depth;
  size_t max_children = default_max_agents;
  subagent_factory spawn_subagent;
  /// The custom subagent types a launch may name; null: none.
  std::shared_ptr<const agent_types> types;
  /// Agents of earlier runs (their session.json): listed, and resumable by id.
  std::vector<session_info> past_agents;
  /// Writes to the owner's durable queue.
  disk_io_actor disk;
};

/// Spawns a supervisor that reports to `owner`.
agent_supervisor_actor spawn_agent_supervisor(caf::actor_system& sys,
                                              agent_supervisor_config config,
                                              agent_owner_actor owner);

/// Why an actor stopped, in plain words for a transcript or a notification ("it was killed"),
/// never CAF's own spelling (exit_reason(kill)).
std::string plain_words(const caf::actor_system& sys, const caf::error& reason);

} // namespace troupe
