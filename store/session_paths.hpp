#pragma once
// Where a session's files are. A top-level session lives in <troupe home>/sessions/<id>; a
// subagent in its parent's agents/<agent id>, to any depth. This is the one place that spells
// the names of the files inside.

#include <filesystem>
#include <optional>
#include <string>

namespace troupe {

/// <troupe home>/sessions: the directory of every top-level session.
std::filesystem::path sessions_root(const std::filesystem::path& troupe_home);

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

  /// The files a session holds only while a process runs it, or that stay with the original
  /// when it is copied: its lock, control file and socket, and its queue (and what was set
  /// aside from it). A fork copies none of them.
  bool belongs_to_original(const std::filesystem::path& file_name) const;

  friend bool operator==(const session_paths& a, const session_paths& b) {
    return a.dir_ == b.dir_;
  }

private:
  static constexpr const char* agents_dir_name = "agents";
  std::filesystem::path dir_;
};

} // namespace troupe
