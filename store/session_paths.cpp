#include "store/session_paths.hpp"

#include <algorithm>
#include <cctype>

#include "store/ids.hpp"

namespace troupe {

std::filesystem::path set_aside_path(const std::filesystem::path& queue) {
  return queue.string() + ".bad";
}

std::filesystem::path torn_lines_path(const std::filesystem::path& transcript) {
  return transcript.string() + ".torn";
}

std::filesystem::path sessions_root(const std::filesystem::path& troupe_home) {
  return troupe_home / "sessions";
}

std::filesystem::path fleets_root(const std::filesystem::path& troupe_home) {
  return troupe_home / "fleets";
}

std::optional<fleet_paths> fleet_of(const session_paths& session) {
  auto sessions = session.dir().parent_path();
  auto fleet = sessions.parent_path();
  if (session.dir().filename().empty() || sessions.filename() != "sessions" ||
      fleet.parent_path().filename() != "fleets")
    return std::nullopt;
  // The shape alone is not enough: a troupe home may itself sit in a folder named fleets/.
  std::error_code ec;
  if (!std::filesystem::exists(fleet_paths{fleet}.info(), ec) &&
      !std::filesystem::exists(fleet_paths{fleet}.lock(), ec))
    return std::nullopt;
  return fleet_paths{fleet};
}

std::string task_session_id(const std::string& fleet_id, const std::string& task_id) {
  constexpr size_t longest_kept = 100;
  auto nameable = !task_id.empty() && task_id.size() <= longest_kept && task_id != "." &&
                  task_id != ".." &&
                  std::all_of(task_id.begin(), task_id.end(), [](unsigned char c) {
                    return std::isalnum(c) || c == '.' || c == '_' || c == '-';
                  });
  // Within a session id's 128 characters, or troupe show could not name it.
  constexpr size_t longest_session_id = 128;
  if (nameable && fleet_id.size() + 1 + task_id.size() <= longest_session_id)
    return fleet_id + "-" + task_id;
  std::string readable;
  auto room = longest_session_id > fleet_id.size() + 18 ? longest_session_id - fleet_id.size() - 18
                                                         : size_t{0};
  for (unsigned char c : task_id.substr(0, std::min<size_t>(40, room)))
    readable += std::isalnum(c) ? static_cast<char>(c) : '_';
  return fleet_id + "-" + readable + "-" + stable_hash_hex(task_id);
}

session_paths session_paths::top_level(const std::filesystem::path& troupe_home,
                                       const std::string& id) {
  return session_paths{sessions_root(troupe_home) / id};
}

bool holds_session(const session_paths& session) {
  std::error_code ec;
  return std::filesystem::exists(session.transcript(), ec);
}

std::optional<agent_path_step> first_agent_of(const std::string& path_below) {
  // agents/<id>, repeated, each part whole: checked once, in one pass.
  std::optional<agent_path_step> first;
  size_t at = 0;
  while (true) {
    auto agents_end = path_below.find('/', at);
    if (agents_end == std::string::npos ||
        path_below.compare(at, agents_end - at, session_paths::agents_dir_name) != 0)
      return std::nullopt;
    auto id_end = path_below.find('/', agents_end + 1);
    auto id = path_below.substr(agents_end + 1, id_end == std::string::npos
                                                   ? std::string::npos
                                                   : id_end - agents_end - 1);
    if (id.empty())
      return std::nullopt;
    if (!first)
      first = agent_path_step{id, id_end == std::string::npos
                                    ? std::string{}
                                    : path_below.substr(id_end + 1)};
    if (id_end == std::string::npos)
      return first;
    at = id_end + 1;
  }
}

bool session_paths::is_agent() const {
  return dir_.has_parent_path() && dir_.parent_path().filename() == agents_dir_name;
}

std::optional<session_paths> session_paths::launcher() const {
  if (!is_agent())
    return std::nullopt;
  return session_paths{dir_.parent_path().parent_path()};
}

session_paths session_paths::top() const {
  auto at = *this;
  while (auto up = at.launcher())
    at = *up;
  return at;
}

std::string session_paths::path_below_top() const {
  return is_agent() ? dir_.lexically_relative(top().dir_).generic_string() : std::string{};
}

bool session_paths::belongs_to_original(const std::filesystem::path& file_name) const {
  for (const auto& own : {lock(), control(), dir_ / control_socket_name, queue(),
                          set_aside_path(queue())})
    if (file_name == own.filename())
      return true;
  return false;
}

} // namespace troupe
