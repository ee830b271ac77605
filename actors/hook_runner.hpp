#pragma once
// The hook runner: a session's external hook commands (settings "hooks", Claude Code's layout),
// each run by bash with its event as JSON on stdin and supervised on a thread of its own
// (actors/process_runner), killed with its process group at its timeout. Their answers are combined into one hook_outcome.

#include <filesystem>
#include <string>
#include <vector>

#include "protocol/interfaces.hpp"
#include "tools/child_process.hpp"

namespace caf {
class actor_system;
}

namespace troupe {

struct hook_runner_config {
  std::vector<hook_command> commands;
  std::string session_id;
  std::filesystem::path transcript_path;
  /// The workspace: commands run here.
  std::filesystem::path cwd;
  /// The bash that runs them (`bash -c COMMAND`).
  std::string shell_program = "/bin/bash";
  /// Variables the commands get over troupe's own (the session's TROUPE_SESSION_ID, …).
  child_environment environment;
  /// Calls the client's hook callbacks (commands with a callback_id).
  hook_callback_actor callbacks;
  /// A front end shows the session's hook events to a person, a failed hook among them: the
  /// failure is then logged at info, not warn, so it is read once.
  bool failures_shown = false;
  /// The session's permission mode in Claude Code's spelling ("default", "acceptEdits",
  /// "plan", "bypassPermissions"): every input's `permission_mode`.
  std::string permission_mode;
};

/// Spawns the runner of one session; it reports each command's start and end to `session`.
hook_runner_actor spawn_hook_runner(caf::actor_system& sys, hook_runner_config config,
                                    session_actor session);

/// True when `matcher` selects the tool: empty or "*" selects all; otherwise a regular
/// expression that must match the whole of troupe's name or of Claude Code's ("shell" is
/// "Bash", "read" is "Read", …).
bool hook_matches(const std::string& matcher, const std::string& tool);

/// Combines the answers of one event's commands: exit 2 blocks with stderr as the reason; exit
/// 0 with a JSON object on stdout may block ("decision": "block", "reason"), decide a
/// PreToolUse call's permission ("decision": "approve", or "hookSpecificOutput" with
/// "permissionDecision" allow, ask or deny, its "permissionDecisionReason" and
/// "updatedInput"), stop the session ("continue": false, "stopReason"), speak to the user
/// ("systemMessage"), add context ("additionalContext", also inside "hookSpecificOutput") and
/// queue "messages"; for SessionStart and UserPromptSubmit plain stdout is context; anything
/// else is ignored. `outcomes` names each run's outcome: "success", "blocked", "stopped",
/// "error" or "timeout"; `quiet` says which asked for "suppressOutput".
hook_outcome combine_hook_results(hook_event event,
                                  const std::vector<hook_process_result>& results,
                                  std::vector<std::string>* outcomes = nullptr,
                                  std::vector<bool>* quiet = nullptr);

} // namespace troupe
