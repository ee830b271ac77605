#pragma once
// Fork's copy: a session copied into a new session directory to go on from there.

#include "protocol/expected.hpp"
#include "store/session_catalog.hpp"
#include "store/session_paths.hpp"

namespace troupe {

/// Copies the session `from` into `to` (a new session): its transcript (whole lines: the source
/// may be running), loop state, subagents, full tool outputs and task logs, with paths into the
/// old directory pointed at the new one. What belongs to a live process (lock, control file)
/// and the queue stay with the original, and so does its session.json (the copy writes its own).
/// Refused when `to` has a transcript; a copy that fails part-way takes back what it wrote
/// (but not `to`'s lock, which is the caller's).
expected<session_paths> fork_session(const stored_session& from, const session_paths& to);

} // namespace troupe
