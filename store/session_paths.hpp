#pragma once
// Where a session's files are. A top-level session lives in <troupe home>/sessions/<id>; a
// subagent in its parent's agents/<agent id>, to any depth. This is the one place that spells
// the names of the files inside.

#include <filesystem>
#include <optional>
#include <string>

namespace troupe {

/// Where readers set aside the lines of `queue` they cannot deliver (queue.jsonl.bad).
std::filesystem::path set_aside_path(const std::filesystem::path& queue);

/// Where the owner of `transcript` saves a torn last line before cutting it off
/// (transcript.jsonl.torn).
std::filesystem::path torn_lines_path(const std::filesystem::path& transcript);

/// <troupe home>/sessions: the directory of every top-level session.
std::filesystem::path sessions_root(const std::filesystem::path& troupe_home);

/// <troupe home>/fleets: the directory of every fleet (troupe fleet).
std::filesystem::path fleets_root(const std::filesystem::path& troupe_home);

/// The files of one session's (or subagent's) directory.
class session_paths {
public:
  session_paths() = default;
  explicit session_paths(std::filesystem::path dir) : dir_(std::move(dir)) {}

  /// The top-level session `id` under `troupe_home`.
  static session_paths top_level(const std::filesystem::path& troupe_home, const std::string& id);

  const std::filesystem::path& dir() const { return dir_; }
  /// Its id: the directory's name (a subagent's agent id).
  std::string id() const { return dir_.filename().string(); }

  /// transcript.jsonl: every message, one per line.
  std::filesystem::path transcript() const { return dir_ / "transcript.jsonl"; }
  /// state.json: the loop state after every step.
  std::filesystem::path state() const { return dir_ / "state.json"; }
  /// session.json: what `troupe ls` shows, after every turn.
  std::filesystem::path info() const { return dir_ / "session.json"; }
  /// queue.jsonl: the durable queue of task notifications.
  std::filesystem::path queue() const { return dir_ / "queue.jsonl"; }
  /// session.lock: held by the process that runs the session.
  std::filesystem::path lock() const { return dir_ / "session.lock"; }
  /// control.json: where a live session's control socket is, and its token.
  std::filesystem::path control() const { return dir_ / control_file_name; }
  /// control.json's and the control socket's names inside the directory (the control endpoint
  /// works through a descriptor of it).
  static constexpr const char* control_file_name = "control.json";
  static constexpr const char* control_socket_name = "control.sock";
  /// tool-results/: whole tool outputs too long for the context.
  std::filesystem::path tool_results() const { return dir_ / "tool-results"; }
  /// tasks/: background tasks' logs.
  std::filesystem::path tasks() const { return dir_ / "tasks"; }
  /// agents/: one directory per subagent.
  std::filesystem::path agents() const { return dir_ / agents_dir_name; }
  /// The subagent `agent_id`'s directory.
  session_paths agent(const std::string& agent_id) const {
    return session_paths{agents() / agent_id};
  }

  /// True when this is a subagent's directory (…/agents/<id>).
  bool is_agent() const;
  /// The session that launched this subagent; none for a top-level session.
  std::optional<session_paths> launcher() const;
  /// The top-level session above this one (itself when it is one).
  session_paths top() const;
  /// Its path below its top-level session ("agents/X", "agents/X/agents/Y"; empty for one).
  std::string path_below_top() const;

  /// Whether `file_name`, a file directly in this directory, is one a session holds only while a
  /// process runs it, or that stays with the original when it is copied: its lock, control
  /// file and socket, and its queue (and what was set aside from it). A fork copies none.
  bool belongs_to_original(const std::filesystem::path& file_name) const;

  friend bool operator==(const session_paths& a, const session_paths& b) {
    return a.dir_ == b.dir_;
  }

  /// The name of the folder of a session's subagents.
  static constexpr const char* agents_dir_name = "agents";

private:
  std::filesystem::path dir_;
};

/// The files of one fleet's directory, <troupe home>/fleets/<fleet id>: its tasks as given, its
/// results, its lock, and one session directory per task under sessions/.
class fleet_paths {
public:
  fleet_paths() = default;
  explicit fleet_paths(std::filesystem::path dir) : dir_(std::move(dir)) {}
  static fleet_paths of(const std::filesystem::path& troupe_home, const std::string& fleet_id) {
    return fleet_paths{fleets_root(troupe_home) / fleet_id};
  }

  const std::filesystem::path& dir() const { return dir_; }
  std::string id() const { return dir_.filename().string(); }
  /// fleet.json: what the fleet was started with (its tasks file, results file, task count).
  std::filesystem::path info() const { return dir_ / "fleet.json"; }
  /// tasks.jsonl: the tasks as read, one JSON object per line (CSV input is converted).
  std::filesystem::path tasks() const { return dir_ / "tasks.jsonl"; }
  /// results.jsonl: the default results file.
  std::filesystem::path results() const { return dir_ / "results.jsonl"; }
  /// fleet.lock: held by the process that runs the fleet (and so every task session in it).
  std::filesystem::path lock() const { return dir_ / "fleet.lock"; }
  /// sessions/: one directory per task.
  std::filesystem::path sessions() const { return dir_ / "sessions"; }
  session_paths task_session(const std::string& session_id) const {
    return session_paths{sessions() / session_id};
  }

private:
  std::filesystem::path dir_;
};

/// The fleet a session's directory belongs to, when it is a fleet task's (…/fleets/F/sessions/S);
/// a subagent of a task belongs to no fleet directly (ask with its top()).
std::optional<fleet_paths> fleet_of(const session_paths& session);

/// The session id of a fleet's task: the fleet's id, '-', and the task's id when that can name
/// a directory (letters, digits, '.', '_', '-'; at most 100 characters), else a readable part
/// of it and a hash of the whole. Stable (a rerun finds the task's session again) and unique
/// across fleets (troupe show finds it by this id alone).
std::string task_session_id(const std::string& fleet_id, const std::string& task_id);

/// True when `session`'s directory holds a session: it has a transcript (an id whose directory
/// has none is free, or a session still starting).
bool holds_session(const session_paths& session);

/// A path below a session ("agents/X", "agents/X/agents/Y"), as the control channel routes a
/// command down the tree: its first agent, and the path below that agent ("" for X itself).
struct agent_path_step {
  std::string agent_id;
  std::string below;
};

/// Splits `path_below` at its first agent; none when it is not agents/<id>[/agents/<id>…]
/// (an empty id, a trailing slash, anything but "agents" between ids).
std::optional<agent_path_step> first_agent_of(const std::string& path_below);

} // namespace troupe
