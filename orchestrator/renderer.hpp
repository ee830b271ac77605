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

/// How the CLI shows a session.
struct render_options {
  output_format format = output_format::text;
  /// stream-json: add `stream_event` lines with the text deltas.
  bool include_partial_messages = false;
};

/// Spawns a renderer of `session`'s events writing to `out` (subscribe it to the session).
/// After the session_ended event it calls `on_end` (from the renderer's thread) and quits. A
/// session that goes down without that event ends the rendering as an error. When `out` is
/// closed by its reader (a broken pipe) the session is interrupted: nobody is listening.
event_sink_actor spawn_renderer(caf::actor_system& sys, render_options options, std::FILE* out,
                                session_actor session,
                                std::function<void(const session_ended_event&)> on_end);

} // namespace troupe
