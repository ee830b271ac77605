#pragma once
// Wires one agent together: a session with its step actor and tool executor, driving a model.

#include "actors/session.hpp"
#include "tools/tool_spec.hpp"

namespace troupe {

/// Spawns a tool executor for `tools` and a session that drives `model` through it.
/// The registry comes from session.registry. Send start_atom to the result to begin.
session_actor spawn_agent(caf::actor_system& sys, session_config session, tool_context tools,
                          model_client_actor model);

} // namespace troupe
