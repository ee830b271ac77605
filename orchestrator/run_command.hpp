#pragma once
// `troupe run` and `troupe demo` once their input is checked: one agent to its terminal state.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "actors/http_model.hpp"
#include "context/token_budget.hpp"
#include "orchestrator/renderer.hpp"
#include "protocol/loop_state.hpp"
#include "protocol/message.hpp"
#include "providers/scripted_script.hpp"
#include "tools/permissions.hpp"

namespace troupe {

/// A model as resolved from a spec: exactly one of the two is set.
struct model_choice {
  std::optional<script> model_script;
  std::optional<http_model_config> http_model;
  tool_format format = tool_format::markdown;
};

/// Resolves a model spec ("openai/…", "scripted:PATH", …) the way --model is resolved.
using model_resolver = std::function<expected<model_choice>(const std::string& spec)>;

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
  size_t max_tool_output = 30000;
  /// The model's context window and output size (table, settings, flags).
  context_budget budget;
  std::filesystem::path cwd;
  std::filesystem::path troupe_home;
  std::filesystem::path home;
  /// Absolute path of the bash the shell tool runs.
  std::string shell_program = "/bin/bash";
  std::string session_id;
  /// Messages of an existing session with this id (empty for a new one).
  std::vector<message> history;
  /// The loop state that session left behind, when state.json could be read.
  std::optional<loop_state> resumed_state;
  render_options render;
  /// What tool calls may run; the rules' bare denials are already out of the registry.
  permission_policy permissions;
  /// Ask the person at the terminal about "ask" decisions (stdin and stderr are terminals).
  bool ask_on_terminal = false;
  /// For subagents launched with a model of their own.
  model_resolver resolve_model;
  int32_t max_agent_depth = 3;
  size_t max_agents = 20;
  /// Background subagents still running when the run ends are left to finish (the process
  /// waits for them) instead of being stopped.
  bool let_agents_finish = false;
  /// Stay alive waiting for notifications when the queue is empty; end `completed` after
  /// `idle_timeout` without any (0: never).
  bool wait_notifications = false;
  std::chrono::milliseconds idle_timeout{0};
};

/// Runs one agent to its terminal state, printing its events to `out`. SIGINT interrupts the
/// run (a second one stops it at once). Returns the exit code of the terminal state.
int execute_run(run_settings settings, std::FILE* out);

} // namespace troupe
