#pragma once
// The commands that reach a running session from another process through its control endpoint.

#include <filesystem>
#include <string>

#include "protocol/expected.hpp"

namespace troupe {

/// `troupe notify SESSION [--urgent] TEXT` (SESSION: an id, a name or a subagent's id) under
/// `troupe_home`: appends `text` to its durable queue, then pokes it if it runs. Returns what
/// to tell the user once the message is durable (delivered, or queued for the next run), else
/// why it is not (an unknown or unreadable session, a full queue). Prints nothing: the CLI
/// says it, so that the session id goes down from here and never back up.
expected<std::string> notify_session(const std::filesystem::path& troupe_home,
                                     const std::string& id_or_name, const std::string& text,
                                     bool urgent);

/// `troupe interrupt SESSION|AGENT_ID`: a session's step, or a subagent's through the endpoint
/// of the top-level session whose process runs it.
int run_interrupt(const std::string& id_or_name);

/// `troupe background AGENT`: finds the session that launched the agent and has it move the
/// agent to the background.
int run_background(const std::string& agent_id);

} // namespace troupe
