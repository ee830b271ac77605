#pragma once
// The commands that reach a running session from another process through its control endpoint.

#include <string>

namespace troupe {

/// `troupe notify SESSION [--urgent] TEXT` (SESSION: an id or a name): appends to the durable
/// queue, then pokes the session if it runs. Exit 0 once the message is durable; 1 for an
/// unknown session or a full queue; 2 for an empty message.
int run_notify(const std::string& id_or_name, const std::string& text, bool urgent);

/// `troupe interrupt SESSION|AGENT_ID`: a session's step, or a subagent's through the endpoint
/// of the top-level session whose process runs it.
int run_interrupt(const std::string& id_or_name);

/// `troupe background AGENT`: finds the session that launched the agent and has it move the
/// agent to the background.
int run_background(const std::string& agent_id);

} // namespace troupe
