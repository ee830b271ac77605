#include "store/session_catalog.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <chrono>

#include "protocol/private_files.hpp"
#include "store/ids.hpp"
#include "store/session_lock.hpp"
#include "store/state_files.hpp"

namespace troupe {

namespace {

int64_t mtime_ms(const std::filesystem::path& path) {
  std::error_code ec;
  auto written = std::filesystem::last_write_time(path, ec);
  if (ec)
    return 0;
  // file_clock has no portable conversion in C++17: measure both clocks now.
  auto age = std::filesystem::file_time_type::clock::now() - written;
  return now_ms() - std::chrono::duration_cast<std::chrono::milliseconds>(age).count();
}

// A session written before session.json existed: what its transcript and state tell.
void fill_from_transcript(const session_paths& session, session_info& info) {
  if (auto first = read_first_prompt(session.transcript())) {
    info.first_prompt = std::move(first->text);
    info.created_ms = first->timestamp_ms;
  }
  if (auto state = read_loop_state(session.state())) {
    info.turns = state->turn_count;
    info.steps = state->total_steps;
  }
  info.state = "unknown";
}

bool denied(const std::error_code& ec) {
  return ec == std::errc::permission_denied || ec == std::errc::operation_not_permitted;
}

// "permission denied: PATH" when a file of `session` cannot be read for want of permission
// (another user's session); empty otherwise.
std::string access_problem(const session_paths& session) {
  for (const auto& path : {session.transcript(), session.info()}) {
    file_handle fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (!fd && (errno == EACCES || errno == EPERM))
      return "permission denied: " + path.string();
  }
  return {};
}

// The subagents of `parent`, depth first, below `depth`; live while the top-level session
// runs and each says it runs (a subagent runs in its top-level session's process).
void add_agents(const stored_session& parent, bool top_live, int depth,
                std::vector<agent_in_tree>& out) {
  for (auto& info : agents_of(parent.paths)) {
    auto agent = read_session(parent.paths.agent(info.id));
    agent.live = top_live && agent.info.state == "running";
    out.push_back(agent_in_tree{agent, parent.info.id, depth});
    add_agents(agent, top_live, depth + 1, out);
  }
}

} // namespace

std::string stored_session::state_text() const {
  if (!unreadable.empty())
    return "unreadable";
  if (live)
    return "running";
  // A session that says it runs but has no process died without reaching a terminal state.
  return info.state == "running" ? "crashed" : info.state;
}

stored_session read_session(const session_paths& session) {
  stored_session s;
  s.paths = session;
  s.unreadable = access_problem(session);
  if (!s.unreadable.empty()) {
    s.info.id = session.id();
    s.last_activity_ms = mtime_ms(session.dir());
    return s;
  }
  if (auto info = read_session_info(session.info()))
    s.info = std::move(*info);
  else
    fill_from_transcript(session, s.info);
  s.info.id = session.id();
  s.last_activity_ms = std::max(mtime_ms(session.transcript()), s.info.updated_ms);
  s.live = session_running(session);
  return s;
}

std::vector<session_info> agents_of(const session_paths& session) {
  std::vector<session_info> agents;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(session.agents(), ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    // One agent's directory that cannot be looked into is passed over, not the end of the list.
    std::error_code entry_ec;
    session_paths agent{it->path()};
    if (it->is_directory(entry_ec) && holds_session(agent))
      agents.push_back(read_session(agent).info);
  }
  std::sort(agents.begin(), agents.end(),
            [](const session_info& a, const session_info& b) { return a.id < b.id; });
  return agents;
}

std::vector<agent_in_tree> agent_tree(const stored_session& top) {
  std::vector<agent_in_tree> out;
  if (top.unreadable.empty())
    add_agents(top, top.live, 1, out);
  return out;
}

expected<loaded_session> load_session(const session_paths& session, transcript_access access) {
  auto transcript = load_transcript(session.transcript(), access);
  if (!transcript)
    return failure{transcript.error()};
  loaded_session loaded;
  loaded.history = std::move(transcript->messages);
  loaded.repair_note = std::move(transcript->repair_note);
  // The transcript is the source of truth; the state only carries counters over.
  std::error_code ec;
  if (std::filesystem::exists(session.state(), ec)) {
    // Its owner holds the lock: nobody rewrites it meanwhile, and a torn one stays torn.
    int tries = access == transcript_access::owner ? 1 : torn_read_tries;
    if (auto state = read_loop_state(session.state(), tries))
      loaded.state = *state;
    else
      loaded.state_problem = state.error();
  }
  return loaded;
}

expected<std::vector<stored_session>> session_catalog::list() const {
  std::vector<stored_session> out;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(root_, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    // Another user's session is listed as unreadable, not skipped nor taken for unknown.
    std::error_code file_ec;
    session_paths session{it->path()};
    if (!std::filesystem::exists(session.transcript(), file_ec) && !denied(file_ec))
      continue;
    auto found = read_session(session);
    if (!found.info.persist) {
      // --no-session-persistence: never listed; what a killed run left goes once nothing runs it.
      if (!found.live) {
        std::error_code removed;
        std::filesystem::remove_all(session.dir(), removed);
      }
      continue;
    }
    out.push_back(std::move(found));
  }
  // Another user's sessions folder is not an empty one.
  if (out.empty() && ec == std::errc::permission_denied)
    return failure{"permission denied: cannot read " + root_.string()};
  std::sort(out.begin(), out.end(), [](const stored_session& a, const stored_session& b) {
    return a.last_activity_ms != b.last_activity_ms ? a.last_activity_ms > b.last_activity_ms
                                                    : a.info.id > b.info.id;
  });
  return out;
}

expected<session_paths> session_catalog::existing(const std::string& session_id) const {
  if (!is_valid_session_id(session_id))
    return failure{"invalid session id '" + session_id + "'"};
  auto session = this->session(session_id);
  // A session that is starting has its control endpoint a moment before its transcript.
  std::error_code transcript_ec;
  std::error_code control_ec;
  if (!std::filesystem::exists(session.transcript(), transcript_ec) &&
      !std::filesystem::exists(session.control(), control_ec)) {
    if (denied(transcript_ec) || denied(control_ec))
      return failure{"permission denied: cannot read " + session.dir().string() +
                     " (the session belongs to another user?)"};
    if (auto task = fleet_task_session(session_id))
      return task;
    else if (task.error() != "none")
      return failure{task.error()};
    return failure{"unknown session '" + session_id + "' (no " +
                   session.transcript().string() + ")"};
  }
  return session;
}

expected<session_paths> session_catalog::fleet_task_session(const std::string& session_id) const {
  std::vector<session_paths> found;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(fleets_root(root_.parent_path()), ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    auto task = fleet_paths{it->path()}.task_session(session_id);
    if (holds_session(task))
      found.push_back(task);
  }
  if (found.empty())
    return failure{"none"};
  if (found.size() > 1) {
    std::string fleets;
    for (auto& task : found)
      fleets += (fleets.empty() ? "" : ", ") + task.dir().parent_path().parent_path().filename().string();
    return failure{"session '" + session_id + "' is a task of several fleets (" + fleets +
                   "); look in the fleet's sessions/ folder"};
  }
  return found.front();
}

expected<stored_session> session_catalog::find(const std::string& id_or_name) const {
  if (is_valid_session_id(id_or_name)) {
    auto session = existing(id_or_name);
    if (session) {
      auto found = read_session(*session);
      // One that is not kept is found by its id only while it runs (troupe notify from its
      // own tools), never to be resumed.
      if (!found.info.persist && !found.live)
        return failure{"unknown session '" + id_or_name +
                       "': it ran with --no-session-persistence and was not kept"};
      return found;
    }
    if (session.error().rfind("permission denied", 0) == 0)
      return failure{session.error()};
  }
  auto all = list();
  if (!all)
    return failure{all.error()};
  std::vector<stored_session> named;
  for (auto& s : *all)
    if (!s.info.name.empty() && s.info.name == id_or_name)
      named.push_back(s);
  if (named.size() == 1)
    return named.front();
  if (named.empty())
    return failure{"unknown session '" + id_or_name +
                   "': no session has that id or name (troupe ls lists them)"};
  std::string ids;
  for (auto& s : named)
    ids += (ids.empty() ? "" : ", ") + s.info.id;
  return failure{"the name '" + id_or_name + "' is carried by " + std::to_string(named.size()) +
                 " sessions (" + ids + "): give the id"};
}

expected<stored_agent> session_catalog::find_agent(const std::string& agent_id) const {
  if (!is_valid_session_id(agent_id))
    return failure{"invalid agent id '" + agent_id + "'"};
  std::error_code ec;
  std::vector<stored_agent> found;
  // Another user's session (or any unreadable directory) is passed over, not the end of the
  // search.
  for (auto it = std::filesystem::recursive_directory_iterator(
         root_, std::filesystem::directory_options::skip_permission_denied, ec);
       it != std::filesystem::recursive_directory_iterator();) {
    session_paths candidate{it->path()};
    if (candidate.id() == agent_id && candidate.is_agent()) {
      auto top = candidate.top();
      auto agent = read_session(candidate);
      // It runs in the process of its top-level session: live while that runs and it says so.
      agent.live = agent.info.state == "running" && session_running(top);
      found.push_back(stored_agent{agent, top, {}});
      it.disable_recursion_pending(); // its own agents/ cannot hold it again
    }
    it.increment(ec);
    if (ec) {
      ec.clear();
      it.pop(ec); // an unreadable directory: go on with its siblings
      if (ec)
        break;
    }
  }
  if (found.empty())
    return failure{"unknown agent '" + agent_id + "' (no sessions/…/agents/" + agent_id +
                   " under " + root_.string() + ")"};
  auto best = std::min_element(found.begin(), found.end(), [](auto& a, auto& b) {
    if (a.session.live != b.session.live)
      return a.session.live;
    return a.session.last_activity_ms > b.session.last_activity_ms;
  });
  auto chosen = *best;
  for (auto& other : found)
    if (!(other.session.paths == chosen.session.paths))
      chosen.also_under.push_back(other.top.id());
  return chosen;
}

expected<session_catalog::target>
session_catalog::find_session_or_agent(const std::string& id_or_name) const {
  auto found = find(id_or_name);
  if (found)
    return target{std::move(*found), std::nullopt};
  // Only an id no session has may be an agent's: a session that cannot be read, or a name
  // several carry, is reported as such.
  if (!is_valid_session_id(id_or_name) || found.error().rfind("unknown session", 0) != 0)
    return failure{found.error()};
  auto agent = find_agent(id_or_name);
  if (!agent)
    return failure{"unknown session '" + id_or_name +
                   "': no session has that id or name and no subagent that id (troupe ls "
                   "--all lists them)"};
  auto session = agent->session;
  return target{std::move(session), std::move(*agent)};
}

expected<stored_session> session_catalog::newest_in(const std::filesystem::path& cwd) const {
  auto all = list();
  if (!all)
    return failure{all.error()};
  for (auto& s : *all)
    if (s.info.cwd == cwd.string())
      return s;
  return failure{"no session has run in " + cwd.string() + " yet (troupe ls lists them all)"};
}

expected<bool> remove_session(const stored_session& session) {
  if (session.live)
    return failure{"session " + session.info.id + " is running; stop it first (troupe interrupt " +
                   session.info.id + ")"};
  std::error_code ec;
  std::filesystem::remove_all(session.paths.dir(), ec);
  if (ec)
    return failure{"cannot remove " + session.paths.dir().string() + ": " + ec.message()};
  return true;
}

} // namespace troupe
