#include "orchestrator/remote_commands.hpp"

#include <cstdio>

#include "store/control_channel.hpp"
#include "store/ids.hpp"
#include "store/notification_queue.hpp"
#include "store/session_catalog.hpp"
#include "store/session_lock.hpp"
#include "orchestrator/environment.hpp"

namespace troupe {

namespace {

// Why a session could not be reached: "permission denied" is said as such, anything else
// means it does not run (or not reachably).
std::string unreachable(const std::string& what, const std::string& error) {
  if (error.rfind("permission denied", 0) == 0)
    return "cannot reach " + what + ": " + error;
  return what + " is not running: " + error;
}

// Sends `command` to `session` and reports its answer: printed, exit 0; refused or
// unreachable (`what` names the session in that message), exit 1.
int answer_of(const session_paths& session, control_command command, const std::string& arg,
              const std::string& what) {
  auto answer = send_control(session, command, arg);
  if (!answer)
    return fail_at_runtime(unreachable(what, answer.error()));
  if (answer->status != control_status::ok)
    return fail_at_runtime(to_line(*answer));
  std::printf("%s\n", answer->text.c_str());
  return 0;
}

// Sends `command` to a top-level session found on disk (see answer_of).
int answer_of_session(const stored_session& session, control_command command,
                      const std::string& arg) {
  if (!session.unreadable.empty())
    return fail_at_runtime("cannot reach session " + session.info.id + ": " + session.unreadable);
  // A fleet's task has no control socket of its own (see README, Fleets).
  // (A task `troupe run --resume` runs has its own lock and socket: that one is reachable.)
  if (auto fleet = fleet_of(session.paths);
      fleet && lock_held(fleet->lock()) && !lock_held(session.paths.lock()))
    return fail_at_runtime("session " + session.info.id + " is a task of fleet " + fleet->id() +
                           ", whose tasks take no commands of their own; interrupt the fleet "
                           "(Ctrl+C, or kill -INT its process), and rerun it to resume");
  return answer_of(session.paths, command, arg, "session " + session.info.id);
}

} // namespace

expected<std::string> notify_session(const std::filesystem::path& troupe_home,
                                     const std::string& id_or_name, const std::string& text,
                                     bool urgent) {
  // A subagent's shell runs `troupe notify "$TROUPE_SESSION_ID"` with its own agent id.
  session_catalog catalog{troupe_home};
  auto found = catalog.find_session_or_agent(id_or_name);
  if (!found)
    return failure{found.error()};
  const auto& target = found->session;
  const auto& agent = found->agent;
  const auto& session_id = target.info.id;
  if (!target.unreadable.empty())
    return failure{"cannot notify session " + session_id + ": " + target.unreadable};
  task_notification n;
  n.id = "ntf_" + random_hex(12);
  n.source = "external";
  n.text = text;
  n.urgent = urgent;
  n.sent_at_us = now_us();
  // Durable first: once this returns the message survives anything.
  if (auto queued = append_notification(target.paths.queue(), n); !queued)
    return failure{queued.error()};
  // A poke only makes the session read its queue; without one the message waits there. A
  // subagent runs in its top-level session's process, whose endpoint passes the poke down
  // the tree (agents/X/agents/Y) to the agent, which reads its own queue.
  auto answer = agent ? send_control(agent->top, control_command::notify_agent,
                                     target.paths.path_below_top())
                      : send_control(target.paths,
                                     urgent ? control_command::urgent : control_command::poke, "");
  std::string kind = agent ? "agent" : "session";
  if (answer && answer->status == control_status::ok)
    return "notification " + n.id + " delivered to the running " + kind + " " + session_id;
  return "notification " + n.id + " queued for " + kind + " " + session_id + " (" +
         (answer ? to_line(*answer) : answer.error()) + "); it is read when the " + kind +
         " runs again";
}

int run_interrupt(const std::string& id_or_name) {
  auto found = session_catalog{troupe_home()}.find_session_or_agent(id_or_name);
  if (!found)
    return fail_at_runtime(found.error());
  if (!found->agent)
    return answer_of_session(found->session, control_command::interrupt, "");
  // A subagent runs in its top-level session's process: that session's endpoint passes the
  // command down the tree (agents/X/agents/Y).
  return answer_of(found->agent->top, control_command::interrupt_agent,
                   found->session.paths.path_below_top(), "the session that runs " + id_or_name);
}

int run_background(const std::string& agent_id) {
  auto agent = session_catalog{troupe_home()}.find_agent(agent_id);
  if (!agent)
    return fail_at_runtime(agent.error());
  // The top-level session holds the control endpoint; the parent is named in the path.
  const auto& paths = agent->session.paths;
  bool child_of_top = paths.launcher() == agent->top;
  return answer_of(agent->top, control_command::background,
                   child_of_top ? agent_id : paths.path_below_top(),
                   "the session that launched " + agent_id);
}

} // namespace troupe
