#pragma once
// The control endpoint of a live session: a Unix domain socket, `control.sock` in the session
// directory, served by a poll loop on a thread of its own. Only the session's own user gets in
// (SO_PEERCRED); each connection carries one request line of at most 64 KiB — JSON
// {token, command, arg} — and gets one line back. control.json (token, pid, socket name; mode
// 0600) tells other processes where it is; both files are removed when the session ends. Their
// format and the client side are in store/control_channel.hpp.
// No CAF networking: nothing a peer sends is parsed before its length is bounded.

#include <caf/actor.hpp>

#include "protocol/expected.hpp"
#include "protocol/interfaces.hpp"
#include "store/session_paths.hpp"

namespace caf {
class actor_system;
}

namespace troupe {

/// Opens the control.sock of the session at `paths` (replacing a stale one: call it with the
/// session's lock held) and writes its control.json, then serves them until `session` ends.
/// Returns the endpoint's loop (a detached actor).
expected<caf::actor> spawn_control_endpoint(caf::actor_system& sys, session_actor session,
                                            const session_paths& paths);

} // namespace troupe
