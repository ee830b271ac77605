#include "orchestrator/session_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <functional>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "actors/ids.hpp"
#include "actors/transcript.hpp"
#include "context/token_budget.hpp"
#include "protocol/bounded_json.hpp"
#include "tools/private_files.hpp"
#include "tools/tool_spec.hpp"
#include "orchestrator/environment.hpp"
#include "orchestrator/output_format.hpp"

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

std::optional<nlohmann::json> read_json(const std::filesystem::path& path) {
  // A live session rewrites the file in place (json_file): a read that races the write can
  // come back torn, and reading again a moment later gets the whole file.
  for (int attempt = 0; attempt < 5; ++attempt) {
    std::string text;
    if (!read_whole_file(path, text).empty())
      return std::nullopt;
    auto parsed = parse_json_bounded(text, max_record_depth);
    if (parsed)
      return parsed->is_object() ? std::optional{std::move(*parsed)} : std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  }
  return std::nullopt;
}

// A session written before session.json existed: what its transcript and state tell.
void fill_from_transcript(const std::filesystem::path& dir, session_info& info) {
  std::ifstream in{dir / "transcript.jsonl", std::ios::binary};
  std::string line;
  while (std::getline(in, line)) {
    auto parsed = parse_json_bounded(line, max_record_depth);
    auto m = parsed ? std::move(*parsed) : nlohmann::json{};
    if (m.is_object() && m.value("role", "") == "user" && m.value("origin", "") == "prompt") {
      info.first_prompt = m.value("content", std::string{}).substr(0, 200);
      info.created_ms = m.value("timestamp_ms", int64_t{0});
      break;
    }
  }
  if (auto state = read_loop_state(dir / "state.json")) {
    info.turns = state->turn_count;
    info.steps = state->total_steps;
  }
  info.state = "unknown";
}

std::string when(int64_t ms) {
  auto age_s = (now_ms() - ms) / 1000;
  if (age_s < 60)
    return "just now";
  if (age_s < 3600)
    return std::to_string(age_s / 60) + " min ago";
  if (age_s < 86400)
    return std::to_string(age_s / 3600) + " h ago";
  std::time_t seconds = ms / 1000;
  std::tm local{};
  localtime_r(&seconds, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M", &local);
  return text;
}

std::string cost_text(const session_info& info) {
  return format_cost(info.cost_usd, info.cost_known);
}

std::string state_text(const stored_session& s) {
  if (!s.unreadable.empty())
    return "unreadable";
  if (s.live)
    return "running";
  // A session that says it runs but has no process died without reaching a terminal state.
  return s.info.state == "running" ? "crashed" : s.info.state;
}

std::string cut(std::string text, size_t width) {
  for (auto& c : text)
    if (c == '\n' || c == '\t')
      c = ' ';
  if (text.size() <= width)
    return text;
  auto end = width - 1;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80)
    --end; // never split a UTF-8 character
  return text.substr(0, end) + "…";
}

bool denied(const std::error_code& ec) {
  return ec == std::errc::permission_denied || ec == std::errc::operation_not_permitted;
}

// "permission denied: PATH" when a file of the session in `dir` cannot be read for want of
// permission (another user's session); empty otherwise.
std::string access_problem(const std::filesystem::path& dir) {
  for (const char* name : {"transcript.jsonl", "session.json"}) {
    auto path = dir / name;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0)
      ::close(fd);
    else if (errno == EACCES || errno == EPERM)
      return "permission denied: " + path.string();
  }
  return {};
}

} // namespace

expected<std::shared_ptr<session_lock>> session_lock::take(const std::filesystem::path& dir) {
  // Only its owner may look inside (whole tool outputs hold secrets); an older session made
  // under a looser umask is tightened here.
  if (auto problem = make_private_dirs(dir); !problem.empty())
    return failure{problem};
  // Close-on-exec: a tool's background process must not keep the session locked after troupe.
  int fd = open_private(dir / "session.lock", O_RDWR);
  if (fd < 0)
    return failure{"cannot open " + (dir / "session.lock").string() + ": " + std::strerror(errno)};
  // An open-file-description lock: released when the descriptor closes (or the process dies),
  // and testable without taking it (see session_running).
  struct flock whole{};
  whole.l_type = F_WRLCK;
  whole.l_whence = SEEK_SET;
  if (::fcntl(fd, F_OFD_SETLK, &whole) != 0) {
    ::close(fd);
    return failure{"session " + dir.filename().string() +
                   " is running in another process; send it a message with troupe notify " +
                   dir.filename().string() + ", or --fork it"};
  }
  return std::shared_ptr<session_lock>{new session_lock{fd}};
}

session_lock::~session_lock() {
  if (fd_ >= 0)
    ::close(fd_); // releases the lock
}

bool session_running(const std::filesystem::path& dir) {
  int fd = ::open((dir / "session.lock").c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0)
    return false; // never run by a troupe that locks
  // Asked, not taken: a probe never gets in the way of a run that is starting.
  struct flock whole{};
  whole.l_type = F_WRLCK;
  whole.l_whence = SEEK_SET;
  bool held = ::fcntl(fd, F_OFD_GETLK, &whole) == 0 && whole.l_type != F_UNLCK;
  ::close(fd);
  return held;
}

std::filesystem::path session_dir_of(const std::string& session_id) {
  return troupe_home() / "sessions" / session_id;
}

expected<std::filesystem::path> existing_session(const std::string& session_id) {
  if (!is_valid_session_id(session_id))
    return failure{"invalid session id '" + session_id + "'"};
  auto dir = session_dir_of(session_id);
  // A session that is starting has its control endpoint a moment before its transcript.
  std::error_code transcript_ec;
  std::error_code control_ec;
  if (!std::filesystem::exists(dir / "transcript.jsonl", transcript_ec) &&
      !std::filesystem::exists(dir / "control.json", control_ec)) {
    if (denied(transcript_ec) || denied(control_ec))
      return failure{"permission denied: cannot read " + dir.string() +
                     " (the session belongs to another user?)"};
    return failure{"unknown session '" + session_id + "' (no " + dir.string() +
                   "/transcript.jsonl)"};
  }
  return dir;
}

std::vector<session_info> agents_of(const std::filesystem::path& dir) {
  std::vector<session_info> agents;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir / "agents", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    if (it->is_directory(ec) && std::filesystem::exists(it->path() / "transcript.jsonl", ec))
      agents.push_back(read_session(it->path()).info);
  std::sort(agents.begin(), agents.end(),
            [](const session_info& a, const session_info& b) { return a.id < b.id; });
  return agents;
}

stored_session read_session(const std::filesystem::path& dir) {
  stored_session s;
  s.dir = dir;
  s.unreadable = access_problem(dir);
  if (!s.unreadable.empty()) {
    s.info.id = dir.filename().string();
    s.last_activity_ms = mtime_ms(dir);
    return s;
  }
  if (auto json = read_json(dir / "session.json")) {
    try {
      s.info = json->get<session_info>();
    } catch (const nlohmann::json::exception&) {
      fill_from_transcript(dir, s.info);
    }
  } else {
    fill_from_transcript(dir, s.info);
  }
  s.info.id = dir.filename().string();
  s.last_activity_ms = std::max(mtime_ms(dir / "transcript.jsonl"), s.info.updated_ms);
  s.live = session_running(dir);
  return s;
}

std::vector<stored_session> list_sessions() {
  std::vector<stored_session> out;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(troupe_home() / "sessions", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    // Another user's session is listed as unreadable, not skipped nor taken for unknown.
    std::error_code file_ec;
    if (std::filesystem::exists(it->path() / "transcript.jsonl", file_ec) || denied(file_ec))
      out.push_back(read_session(it->path()));
  }
  std::sort(out.begin(), out.end(), [](const stored_session& a, const stored_session& b) {
    return a.last_activity_ms != b.last_activity_ms ? a.last_activity_ms > b.last_activity_ms
                                                    : a.info.id > b.info.id;
  });
  return out;
}

expected<stored_session> find_session(const std::string& id_or_name) {
  if (is_valid_session_id(id_or_name)) {
    auto dir = existing_session(id_or_name);
    if (dir)
      return read_session(*dir);
    if (dir.error().rfind("permission denied", 0) == 0)
      return failure{dir.error()};
  }
  std::vector<stored_session> named;
  for (auto& s : list_sessions())
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

expected<stored_agent> find_agent(const std::string& agent_id) {
  if (!is_valid_session_id(agent_id))
    return failure{"invalid agent id '" + agent_id + "'"};
  std::error_code ec;
  auto sessions = troupe_home() / "sessions";
  std::vector<stored_agent> found;
  // Another user's session (or any unreadable directory) is passed over, not the end of the
  // search.
  for (auto it = std::filesystem::recursive_directory_iterator(
         sessions, std::filesystem::directory_options::skip_permission_denied, ec);
       it != std::filesystem::recursive_directory_iterator();) {
    const auto& path = it->path();
    if (path.filename() == agent_id && path.parent_path().filename() == "agents") {
      auto top = path.parent_path().parent_path();
      while (top.parent_path().filename() == "agents")
        top = top.parent_path().parent_path();
      auto agent = read_session(path);
      // It runs in the process of its top-level session: live while that runs and it says so.
      agent.live = agent.info.state == "running" && session_running(top);
      found.push_back(stored_agent{agent, top, path.lexically_relative(top).string(), {}});
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
                   " under " + sessions.string() + ")"};
  auto best = std::min_element(found.begin(), found.end(), [](auto& a, auto& b) {
    if (a.session.live != b.session.live)
      return a.session.live;
    return a.session.last_activity_ms > b.session.last_activity_ms;
  });
  auto chosen = *best;
  for (auto& other : found)
    if (other.session.dir != chosen.session.dir)
      chosen.also_under.push_back(other.top.filename().string());
  return chosen;
}

expected<stored_session> newest_session_in(const std::filesystem::path& cwd) {
  for (auto& s : list_sessions())
    if (s.info.cwd == cwd.string())
      return s;
  return failure{"no session has run in " + cwd.string() + " yet (troupe ls lists them all)"};
}

namespace {

// Replaces every occurrence of `from` in `text` with `to`.
void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

// Copies a transcript's whole lines (the source may be running: a line being written is not
// copied), with paths into the source session's directory pointed at the copy's.
std::string copy_transcript(const std::filesystem::path& from, const std::filesystem::path& to,
                            const std::string& old_dir, const std::string& new_dir) {
  std::string text;
  if (!read_whole_file(from, text).empty())
    return "cannot read " + from.string();
  text.erase(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
  replace_all(text, old_dir, new_dir);
  if (auto problem = write_private_file(to, text); !problem.empty())
    return problem;
  return {};
}

} // namespace

expected<std::filesystem::path> fork_session(const stored_session& from,
                                             const std::string& new_id) {
  auto dir = session_dir_of(new_id);
  std::error_code ec;
  if (std::filesystem::exists(dir / "transcript.jsonl", ec))
    return failure{"cannot fork into " + new_id + ": that session exists already"};
  if (auto problem = make_private_dirs(dir); !problem.empty())
    return failure{problem};
  // Paths as they appear inside JSON strings, with the separator after them so that a
  // session whose id extends the source's is left alone.
  auto json_path = [](const std::filesystem::path& p) {
    auto quoted = nlohmann::json(p.string() + "/").dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace); // as the transcript has it
    return quoted.substr(1, quoted.size() - 2);
  };
  auto old_dir = json_path(from.dir);
  auto new_dir = json_path(dir);
  // Everything the session made goes with it — its subagents (resumable in the copy), the full
  // outputs its context points to, its tasks' logs — except what belongs to a live process
  // (lock, control endpoint) and the queue, which stays with the original.
  // A copy that fails part-way takes back what it wrote (the lock is the caller's).
  auto fail = [&](const std::string& problem) -> expected<std::filesystem::path> {
    std::error_code undo_ec;
    for (auto& entry : std::filesystem::directory_iterator(dir, undo_ec))
      if (entry.path().filename() != "session.lock")
        std::filesystem::remove_all(entry.path(), undo_ec);
    return failure{problem};
  };
  for (auto it = std::filesystem::recursive_directory_iterator(from.dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    auto relative = it->path().lexically_relative(from.dir);
    auto name = it->path().filename().string();
    auto target = dir / relative;
    std::error_code entry_ec;
    auto kind = it->symlink_status(entry_ec).type();
    if (kind == std::filesystem::file_type::directory) {
      if (auto problem = make_private_dirs(target); !problem.empty())
        return fail(problem);
      continue;
    }
    if (name == "session.lock" || name == "control.json" || name == "queue.jsonl" ||
        name == "queue.jsonl.bad" ||
        relative == "session.json")
      continue;
    std::string problem;
    if (kind == std::filesystem::file_type::symlink) {
      std::filesystem::copy_symlink(it->path(), target, entry_ec); // a link stays a link
    } else if (kind != std::filesystem::file_type::regular) {
      continue; // a pipe or a socket: nothing to copy
    } else if (name == "transcript.jsonl") {
      problem = copy_transcript(it->path(), target, old_dir, new_dir);
    } else {
      std::filesystem::copy_file(it->path(), target,
                                 std::filesystem::copy_options::overwrite_existing, entry_ec);
      // copy_file gives the copy the original's mode: the copy is private whatever that was.
      if (!entry_ec)
        std::filesystem::permissions(target, std::filesystem::perms::owner_read |
                                               std::filesystem::perms::owner_write,
                                     entry_ec);
    }
    if (entry_ec)
      problem = "cannot copy " + it->path().string() + ": " + entry_ec.message();
    if (!problem.empty())
      return fail(problem);
  }
  if (ec)
    return fail("cannot copy " + from.dir.string() + ": " + ec.message());
  return dir;
}

namespace {

// Each subagent below `parent`, depth first, sorted by id, with its depth (1: a child). A
// subagent runs in its top-level session's process: live while that runs and it says so.
void for_each_agent(const stored_session& parent, bool top_live, int depth,
                    const std::function<void(const stored_session&, const std::string&, int)>& f) {
  for (auto& info : agents_of(parent.dir)) {
    auto agent = read_session(parent.dir / "agents" / info.id);
    agent.live = top_live && agent.info.state == "running";
    f(agent, parent.info.id, depth);
    for_each_agent(agent, top_live, depth + 1, f);
  }
}

} // namespace

int run_ls(bool json, bool all) {
  auto sessions = list_sessions();
  if (sessions.empty()) {
    // Another user's sessions folder is not an empty one.
    std::error_code ec;
    std::filesystem::directory_iterator probe{troupe_home() / "sessions", ec};
    if (ec == std::errc::permission_denied)
      return fail_at_runtime("permission denied: cannot read " +
                             (troupe_home() / "sessions").string());
  }
  if (json) {
    auto print = [](const stored_session& s, const std::string& parent, int depth) {
      // Of an unreadable session nothing but its id is known: no zeros passed off as facts.
      nlohmann::json line = s.unreadable.empty() ? nlohmann::json(s.info)
                                                 : nlohmann::json{{"id", s.info.id}};
      line["state"] = state_text(s);
      line["last_activity_ms"] = s.last_activity_ms;
      line["live"] = s.live;
      if (!parent.empty()) {
        line["parent"] = parent;
        line["depth"] = depth;
      }
      if (!s.unreadable.empty())
        line["error"] = s.unreadable;
      std::printf("%s\n",
                  line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    };
    for (auto& s : sessions) {
      print(s, "", 0);
      if (all && s.unreadable.empty())
        for_each_agent(s, s.live, 1, print);
    }
    return 0;
  }
  if (sessions.empty()) {
    std::printf("no sessions yet in %s\n", (troupe_home() / "sessions").c_str());
    return 0;
  }
  // STATE fits the longest state, permission_blocked.
  std::printf("%-24s %-32s %-17s %-18s %5s %9s\n", "ID", "NAME", "LAST ACTIVITY", "STATE",
              "TURNS", "COST");
  // printf pads by bytes: text is padded by characters so the columns stay aligned.
  auto padded = [](const std::string& text, size_t width) {
    size_t chars = 0;
    for (unsigned char c : text)
      chars += (c & 0xC0) != 0x80 ? 1 : 0;
    return text + std::string(width - std::min(chars, width), ' ');
  };
  auto print = [&](const stored_session& s, const std::string&, int depth) {
    auto name = !s.unreadable.empty()  ? std::string{"(permission denied)"}
                : s.info.name.empty() ? "(" + cut(s.info.first_prompt, 30) + ")"
                                      : s.info.name;
    // A subagent sits below its parent: "└ " indented by its depth.
    auto id = depth == 0 ? s.info.id : std::string(2 * (depth - 1), ' ') + "└ " + s.info.id;
    bool known = s.unreadable.empty();
    std::printf("%s %s %-17s %-18s %5s %9s\n", padded(id, 24).c_str(),
                padded(cut(printable(name), 32), 32).c_str(), when(s.last_activity_ms).c_str(),
                state_text(s).c_str(), known ? std::to_string(s.info.turns).c_str() : "-",
                known ? cost_text(s.info).c_str() : "-");
  };
  for (auto& s : sessions) {
    print(s, "", 0);
    if (all && s.unreadable.empty())
      for_each_agent(s, s.live, 1, print);
  }
  return 0;
}

int run_show(const std::string& id_or_name) {
  auto found = find_session(id_or_name);
  std::string launched_by; // a subagent's parent
  if (!found) {
    // Only an id no session has may be an agent's (a session that cannot be read is reported).
    auto agent = is_valid_session_id(id_or_name) &&
                     found.error().rfind("unknown session", 0) == 0
                   ? find_agent(id_or_name)
                   : expected<stored_agent>{failure{""}};
    if (!agent)
      return fail_at_runtime(found.error());
    launched_by = agent->session.dir.parent_path().parent_path().filename().string();
    if (!agent->also_under.empty()) {
      std::string others;
      for (auto& top : agent->also_under)
        others += (others.empty() ? "" : ", ") + top;
      std::fprintf(stderr,
                   "troupe: agent %s is also under session(s) %s (forks); this is the %s copy, "
                   "under %s\n",
                   id_or_name.c_str(), others.c_str(), agent->session.live ? "running" : "newest",
                   agent->top.filename().string().c_str());
    }
    found = agent->session;
  }
  if (!found->unreadable.empty())
    return fail_at_runtime("cannot show session " + found->info.id + ": " + found->unreadable);
  auto loaded = load_transcript(found->dir / "transcript.jsonl", transcript_access::reader);
  if (!loaded)
    return fail_at_runtime(loaded.error());
  const auto& info = found->info;
  std::printf("● session %s%s · %s · %s · %s · %lld turn(s) · %s\n", info.id.c_str(),
              info.name.empty() ? "" : printable(" (" + info.name + ")").c_str(),
              printable(info.model).c_str(), printable(info.cwd).c_str(), state_text(*found).c_str(), static_cast<long long>(info.turns),
              cost_text(info).c_str());
  if (!info.forked_from.empty())
    std::printf("  forked from %s\n", info.forked_from.c_str());
  if (!launched_by.empty())
    std::printf("  a subagent of %s\n", launched_by.c_str());
  for (auto& m : loaded->messages) {
    auto text = to_text(message_event{info.id, m}, false);
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  return 0;
}

int run_rm(const std::string& id_or_name) {
  auto found = find_session(id_or_name);
  if (!found)
    return fail_at_runtime(found.error());
  if (found->live)
    return fail_at_runtime("session " + found->info.id +
                           " is running; stop it first (troupe interrupt " + found->info.id +
                           ")");
  std::error_code ec;
  std::filesystem::remove_all(found->dir, ec);
  if (ec)
    return fail_at_runtime("cannot remove " + found->dir.string() + ": " + ec.message());
  std::printf("removed session %s\n", found->info.id.c_str());
  return 0;
}

} // namespace troupe
