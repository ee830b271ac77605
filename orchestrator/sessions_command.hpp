#pragma once
// `troupe ls`, `show` and `rm`: the sessions on disk (store/session_catalog) as the user reads
// them.

#include <string>

namespace troupe {

/// `troupe ls`: a table (or JSON lines with --json) of the sessions, newest first; with `all`,
/// each session's subagents below it, as a tree (JSON lines: with "parent").
int run_ls(bool json, bool all = false);

/// `troupe show ID|NAME|AGENT_ID`: the transcript rendered as text.
int run_show(const std::string& id_or_name);

/// `troupe rm ID|NAME`: removes a session that is not running.
int run_rm(const std::string& id_or_name);

} // namespace troupe
