#pragma once
// The sessions under one troupe home, as commands find them: every top-level session, one by id
// or name, a subagent by its id anywhere below them, the newest of a workspace, a session's
// subagents as a tree; what each one's files tell; loading one to run it again; removal.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "protocol/expected.hpp"
#include "protocol/loop_state.hpp"
#include "protocol/message.hpp"
#include "protocol/session_info.hpp"
#include "store/session_paths.hpp"
#include "store/transcript.hpp"

namespace troupe {

/// One session as `troupe ls` sees it.
struct stored_session {
  session_paths paths;
  /// session.json, or what the transcript and state.json tell of a session that has none.
  session_info info;
  /// When its transcript last changed (ms since the epoch).
  int64_t last_activity_ms = 0;
  /// A process is running it now (it holds the session's lock; a subagent: its top-level
  /// session runs and it says it runs).
  bool live = false;
  /// "permission denied: PATH" when its files cannot be read (another user's session); then
  /// nothing else is known of it.
  std::string unreadable;

  /// "running" while live; "crashed" for one that says it runs but has no process; else its
  /// terminal state; "unreadable".
  std::string state_text() const;
};

/// Reads what is known of the session in `session`.
stored_session read_session(const session_paths& session);

/// What session.json tells of each subagent of `session`, sorted by id.
std::vector<session_info> agents_of(const session_paths& session);

/// A subagent found by its id anywhere below the sessions: where it is, and the top-level
/// session whose process runs it. A fork copies its agents with their ids: of several copies
/// the one running wins, else the newest.
struct stored_agent {
  stored_session session;
  session_paths top;
  /// The top-level sessions that hold other copies of it.
  std::vector<std::string> also_under;
};

/// A subagent in a session's tree, as `troupe ls --all` lists it.
struct agent_in_tree {
  stored_session agent;
  /// The id of the session (or subagent) that launched it.
  std::string parent_id;
  /// 1: a child of the top-level session; 2: a grandchild; …
  int depth = 1;
};

/// What a session's files hold for a process about to run it again.
struct loaded_session {
  std::vector<message> history;
  /// state.json's counters, when it can be read.
  std::optional<loop_state> state;
  /// Why state.json could not be read (its counters restart), empty when it could or is absent.
  std::string state_problem;
  /// What load_transcript repaired or skipped, empty when nothing.
  std::string repair_note;
};

/// Loads a session's transcript and state: as its `owner` (who holds its lock and may repair
/// the transcript) or as a `reader` (a fork's source, which may be running elsewhere).
expected<loaded_session> load_session(const session_paths& session, transcript_access access);

/// The sessions of one troupe home.
class session_catalog {
public:
  explicit session_catalog(std::filesystem::path troupe_home)
    : root_(sessions_root(troupe_home)) {}

  /// <troupe home>/sessions.
  const std::filesystem::path& root() const { return root_; }

  /// The top-level session `id` (it need not exist).
  session_paths session(const std::string& id) const { return session_paths{root_ / id}; }

  /// Every top-level session, the most recently active first. An error only when the sessions
  /// folder itself cannot be read for want of permission (a missing one holds none). A session
  /// that is not kept (--no-session-persistence) is left out, and removed when nothing runs it
  /// (a run that was killed left it behind).
  expected<std::vector<stored_session>> list() const;

  /// An id that names an existing session (a transcript, or a control file of one starting):
  /// never a silently created directory. A top-level session first, else a fleet's task
  /// session (an id that several fleets hold is an error naming them).
  expected<session_paths> existing(const std::string& session_id) const;

  /// The session with this id, else the one with this name. A name that several sessions
  /// carry is an error listing their ids. An unknown one's error starts "unknown session", as
  /// does one that was not kept (--no-session-persistence; found by its id only while it runs).
  expected<stored_session> find(const std::string& id_or_name) const;

  /// The subagent with this id, below any session.
  expected<stored_agent> find_agent(const std::string& agent_id) const;

  /// The session with this id or name, else (only for an id no session has) the subagent with
  /// that id: where a command addressed to either goes.
  struct target {
    stored_session session;
    /// Set when it is a subagent: where it is found.
    std::optional<stored_agent> agent;
  };
  expected<target> find_session_or_agent(const std::string& id_or_name) const;

  /// The most recently active session whose workspace is `cwd`.
  expected<stored_session> newest_in(const std::filesystem::path& cwd) const;

private:
  /// The task session with this id in any fleet; the error "none" when no fleet has it.
  expected<session_paths> fleet_task_session(const std::string& session_id) const;

  std::filesystem::path root_;
};

/// Each subagent below `top`, depth first, sorted by id at each level.
std::vector<agent_in_tree> agent_tree(const stored_session& top);

/// Removes a session that is not running, with everything below it.
expected<bool> remove_session(const stored_session& session);

} // namespace troupe
