#pragma once
// The sessions on disk, as the CLI finds them: by id or name, the newest in a directory, and
// the `troupe ls`, `show` and `rm` commands.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "protocol/expected.hpp"
#include "protocol/session_info.hpp"

namespace troupe {

/// An exclusive lock on `<session>/session.lock` (an open-file-description lock), held for as long as the object lives: one
/// process runs a session at a time.
class session_lock {
public:
  /// Takes the lock of the session in `dir` (created if needed); fails, saying so, when another
  /// process holds it.
  static expected<std::shared_ptr<session_lock>> take(const std::filesystem::path& dir);
  session_lock(const session_lock&) = delete;
  session_lock& operator=(const session_lock&) = delete;
  ~session_lock();

private:
  explicit session_lock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

/// True when a process holds the lock of the session in `dir` (it is running).
bool session_running(const std::filesystem::path& dir);

/// <troupe home>/sessions/<id>
std::filesystem::path session_dir_of(const std::string& session_id);

/// An id that names an existing session: never a silently created directory.
expected<std::filesystem::path> existing_session(const std::string& session_id);

/// One session as `troupe ls` sees it.
struct stored_session {
  std::filesystem::path dir;
  /// session.json, or what the transcript and state.json tell of a session that has none.
  session_info info;
  /// When its transcript last changed (ms since the epoch).
  int64_t last_activity_ms = 0;
  /// A process is running it now (it holds the session's lock).
  bool live = false;
  /// "permission denied: PATH" when its files cannot be read (another user's session); then
  /// nothing else is known of it.
  std::string unreadable;
};

/// Every top-level session, the most recently active first.
std::vector<stored_session> list_sessions();

/// Reads what is known of the session in `dir`.
stored_session read_session(const std::filesystem::path& dir);

/// What session.json tells of each subagent under `dir`/agents/, by id.
std::vector<session_info> agents_of(const std::filesystem::path& dir);

/// The session with this id, else the one with this name. A name that several sessions carry
/// is an error listing their ids.
expected<stored_session> find_session(const std::string& id_or_name);

/// A subagent, found by its id anywhere below the sessions (<home>/sessions/<id>[/agents/<id>…]
/// /agents/<agent>): where it is, and the top-level session whose process ran it. A fork copies
/// its agents with their ids: of several copies the one running wins, else the newest.
struct stored_agent {
  stored_session session;
  std::filesystem::path top;
  /// Its path below `top` ("agents/X", "agents/X/agents/Y").
  std::string path_below_top;
  /// The top-level sessions that hold other copies of it.
  std::vector<std::string> also_under;
};
expected<stored_agent> find_agent(const std::string& agent_id);

/// The most recently active session whose workspace is `cwd`.
expected<stored_session> newest_session_in(const std::filesystem::path& cwd);

/// Copies a session into a new session `new_id`: its transcript (whole lines), loop state,
/// subagents, full tool outputs and task logs, with paths into the old directory pointed at
/// the new one; its queue stays with the original. Refused when `new_id` has a transcript.
/// Returns the new session's directory.
expected<std::filesystem::path> fork_session(const stored_session& from, const std::string& new_id);

/// `troupe ls`: a table (or JSON lines with --json) of the sessions, newest first; with `all`,
/// each session's subagents below it, as a tree (JSON lines: with "parent").
int run_ls(bool json, bool all = false);

/// `troupe show ID|NAME|AGENT_ID`: the transcript rendered as text.
int run_show(const std::string& id_or_name);

/// `troupe rm ID|NAME`: removes a session that is not running.
int run_rm(const std::string& id_or_name);

} // namespace troupe
