#include "orchestrator/remote_commands.hpp"

#include <cstdio>

#include "actors/control_endpoint.hpp"
#include "actors/ids.hpp"
#include "actors/notification_queue.hpp"
#include "orchestrator/environment.hpp"
#include "orchestrator/session_store.hpp"

namespace troupe {

namespace {

// Why a session could not be reached: "permission denied" is said as such, anything else
// means it does not run (or not reachably).
std::string unreachable(const std::string& what, const std::string& error) {
  if (error.rfind("permission denied", 0) == 0)
    return "cannot reach " + what + ": " + error;
  return what + " is not running: " + error;
}

} // namespace

int run_notify(const std::string& id_or_name, const std::string& text, bool urgent) {
  auto found = find_session(id_or_name);
  if (!found)
    return fail_at_runtime(found.error());
  const auto& dir = found->dir;
  const auto& session_id = found->info.id;
  if (!found->unreadable.empty())
    return fail_at_runtime("cannot notify session " + session_id + ": " + found->unreadable);
  if (text.empty())
    return fail(std::string{"no message: give it as arguments or on stdin"});
  task_notification n;
  n.id = "ntf_" + random_hex(12);
  n.source = "external";
  n.text = text;
  n.urgent = urgent;
  n.sent_at_us = now_us();
  // Durable first: once this returns the message survives anything.
  if (auto queued = append_notification(dir / "queue.jsonl", n); !queued)
    return fail_at_runtime(queued.error());
  // A poke only makes the session read its queue; without one the message waits there.
  auto answer = send_control(dir, urgent ? "urgent" : "poke", "");
  if (answer && answer->rfind("error", 0) != 0 && answer->rfind("refused", 0) != 0)
    std::printf("notification %s delivered to the running session %s\n", n.id.c_str(),
                session_id.c_str());
  else
    std::printf("notification %s queued for session %s (%s); it is read when the session runs "
                "again\n",
                n.id.c_str(), session_id.c_str(),
                answer ? answer->c_str() : answer.error().c_str());
  return 0;
}

int run_remote_command(const std::string& id_or_name, const std::string& command,
                       const std::string& arg) {
  auto found = find_session(id_or_name);
  if (!found)
    return fail_at_runtime(found.error());
  const auto& dir = found->dir;
  const auto& session_id = found->info.id;
  if (!found->unreadable.empty())
    return fail_at_runtime("cannot reach session " + session_id + ": " + found->unreadable);
  auto answer = send_control(dir, command, arg);
  if (!answer)
    return fail_at_runtime(unreachable("session " + session_id, answer.error()));
  if (answer->rfind("error", 0) == 0 || answer->rfind("refused", 0) == 0)
    return fail_at_runtime(*answer);
  std::printf("%s\n", answer->c_str());
  return 0;
}

// Finds the session that launched an agent: <home>/sessions/<id>[/agents/<id>…]/agents/<agent>.
int run_background(const std::string& agent_id) {
  if (!is_valid_session_id(agent_id))
    return fail_at_runtime("invalid agent id '" + agent_id + "'");
  std::error_code ec;
  auto sessions = troupe_home() / "sessions";
  for (auto it = std::filesystem::recursive_directory_iterator(sessions, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (ec)
      break;
    const auto& path = it->path();
    if (path.filename() != agent_id || path.parent_path().filename() != "agents")
      continue;
    // The top-level session holds the control endpoint; the parent is named in the path.
    auto parent_dir = path.parent_path().parent_path();
    auto top = parent_dir;
    while (top.parent_path().filename() == "agents")
      top = top.parent_path().parent_path();
    auto answer = send_control(top, "background",
                               parent_dir == top ? agent_id
                                                 : std::filesystem::relative(path, top).string());
    if (!answer)
      return fail_at_runtime(
        unreachable("the session that launched " + agent_id, answer.error()));
    if (answer->rfind("error", 0) == 0 || answer->rfind("refused", 0) == 0)
      return fail_at_runtime(*answer);
    std::printf("%s\n", answer->c_str());
    return 0;
  }
  return fail_at_runtime("unknown agent '" + agent_id + "' (no sessions/…/agents/" + agent_id +
                         " under " + sessions.string() + ")");
}

} // namespace troupe
