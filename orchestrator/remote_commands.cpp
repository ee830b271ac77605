#include "orchestrator/remote_commands.hpp"

#include <cstdio>
#include <optional>

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

// Sends `command` to the session in `dir` and reports its answer: printed, exit 0; refused or
// unreachable (`what` names the session in that message), exit 1.
int answer_of(const std::filesystem::path& dir, control_command command,
              const std::string& arg, const std::string& what) {
  auto answer = send_control(dir, command, arg);
  if (!answer)
    return fail_at_runtime(unreachable(what, answer.error()));
  if (answer->status != control_status::ok)
    return fail_at_runtime(to_line(*answer));
  std::printf("%s\n", answer->text.c_str());
  return 0;
}

} // namespace

int run_notify(const std::string& id_or_name, const std::string& text, bool urgent) {
  auto found = find_session(id_or_name);
  std::optional<stored_agent> agent;
  // Only an id no session has may be an agent's (as for interrupt): a subagent's shell runs
  // `troupe notify "$TROUPE_SESSION_ID"` with its own agent id.
  if (!found && is_valid_session_id(id_or_name) &&
      found.error().rfind("unknown session", 0) == 0) {
    auto as_agent = find_agent(id_or_name);
    if (!as_agent)
      return fail_at_runtime(found.error() + ", and no subagent has that id");
    agent = std::move(*as_agent);
  } else if (!found) {
    return fail_at_runtime(found.error());
  }
  const auto& target = agent ? agent->session : *found;
  const auto& dir = target.dir;
  const auto& session_id = target.info.id.empty() ? id_or_name : target.info.id;
  if (!target.unreadable.empty())
    return fail_at_runtime("cannot notify session " + session_id + ": " + target.unreadable);
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
  // A poke only makes the session read its queue; without one the message waits there. A
  // subagent runs in its top-level session's process, whose endpoint passes the poke down
  // the tree (agents/X/agents/Y) to the agent, which reads its own queue.
  auto answer =
    agent ? send_control(agent->top, control_command::notify_agent, agent->path_below_top)
          : send_control(dir, urgent ? control_command::urgent : control_command::poke, "");
  if (answer && answer->status == control_status::ok)
    std::printf("notification %s delivered to the running %s %s\n", n.id.c_str(),
                agent ? "agent" : "session", session_id.c_str());
  else
    std::printf("notification %s queued for %s %s (%s); it is read when the %s runs "
                "again\n",
                n.id.c_str(), agent ? "agent" : "session", session_id.c_str(),
                answer ? to_line(*answer).c_str() : answer.error().c_str(),
                agent ? "agent" : "session");
  return 0;
}

int run_remote_command(const std::string& id_or_name, control_command command,
                       const std::string& arg) {
  auto found = find_session(id_or_name);
  if (!found)
    return fail_at_runtime(found.error());
  const auto& dir = found->dir;
  const auto& session_id = found->info.id;
  if (!found->unreadable.empty())
    return fail_at_runtime("cannot reach session " + session_id + ": " + found->unreadable);
  return answer_of(dir, command, arg, "session " + session_id);
}

// Finds the session that launched an agent: <home>/sessions/<id>[/agents/<id>…]/agents/<agent>.
int run_interrupt(const std::string& id_or_name) {
  auto found = find_session(id_or_name);
  // Only an id no session has may be an agent's (a session that cannot be read is reported).
  if (found || !is_valid_session_id(id_or_name) ||
      found.error().rfind("unknown session", 0) != 0)
    return run_remote_command(id_or_name, control_command::interrupt, "");
  auto agent = find_agent(id_or_name);
  if (!agent)
    return fail_at_runtime("unknown session or agent '" + id_or_name +
                           "': no session has that id or name and no subagent that id "
                           "(troupe ls --all lists them)");
  // A subagent runs in its top-level session's process: that session's endpoint passes the
  // command down the tree (agents/X/agents/Y).
  return answer_of(agent->top, control_command::interrupt_agent, agent->path_below_top,
                   "the session that runs " + id_or_name);
}

int run_background(const std::string& agent_id) {
  auto agent = find_agent(agent_id);
  if (!agent)
    return fail_at_runtime(agent.error());
  // The top-level session holds the control endpoint; the parent is named in the path.
  bool child_of_top = agent->path_below_top.find('/', 7) == std::string::npos;
  return answer_of(agent->top, control_command::background,
                   child_of_top ? agent_id : agent->path_below_top,
                   "the session that launched " + agent_id);
}

} // namespace troupe
