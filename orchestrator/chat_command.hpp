#pragma once
// `troupe chat`: an agent driven by a person at the terminal.

#include "orchestrator/run_command.hpp"

namespace troupe {

/// Runs an interactive session until /exit, Ctrl+D or Ctrl+C twice on an empty prompt. On a
/// terminal: libedit line editing and history, streaming output above the prompt, a status
/// line, permission questions at the prompt, type-ahead while the agent works. With stdin not a
/// terminal each line read is one message, sent when the agent waits for input. Returns the exit
/// code (0 once the session ends completed).
int execute_chat(run_settings settings);

} // namespace troupe
