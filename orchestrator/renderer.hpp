#pragma once
// The CLI's subscriber: prints a session's events to a stream as text or stream-json.

#include <cstdio>
#include <functional>

#include "orchestrator/output_format.hpp"
#include "protocol/interfaces.hpp"

namespace caf {
class actor_system;
}

namespace troupe {

/// Spawns a renderer writing to `out`. After the session_ended event it calls `on_end`
/// (from the renderer's thread) and quits.
event_sink_actor spawn_renderer(caf::actor_system& sys, output_format format, std::FILE* out,
                                std::function<void(const session_ended_event&)> on_end);

} // namespace troupe
