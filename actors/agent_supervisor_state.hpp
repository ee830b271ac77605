#pragma once
// Private to the agent supervisor's sources: its state, and the functions they share
// (agent_supervisor.cpp: launches, ends, control, the owner's end; agent_waits.cpp: task_wait,
// task_output and task_stop on agent ids).

#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <set>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/agent_supervisor.hpp"

namespace troupe::agent_supervision {

/// One agent the supervisor owns (or knows from an earlier run).
struct supervised_agent {
  agent_descriptor info;
  /// Null until it is spawned (launches are spawned after their call was answered).
  session_actor actor;
  /// Set while a foreground launch waits for the agent's answer.
  std::optional<caf::typed_response_promise<tool_result>> waiting;
  /// Its end was answered already (foreground result, task_wait, task_stop, the notification
  /// sent): nothing more is told about it.
  bool reported = false;
  /// Left to finish after the owner ended: it writes its end to the owner's queue itself.
  bool detached = false;
  /// task_stop stopped it: no notification follows, whatever comes after.
  bool stopping = false;
  /// Which launch this record is (a resume makes a new one): a stale queued launch is skipped.
  uint64_t launch_serial = 0;
  bool running() const { return info.state == "running"; }
};

/// A task_wait (or a blocking task_output) in progress.
struct agent_wait {
  uint64_t serial = 0;
  std::vector<std::string> ids;
  bool any = false;
  /// task_output: one agent, its whole result.
  bool whole_result = false;
  /// The agents that ended while it waited: their results are its answer (no notification).
  std::vector<std::string> taken;
  std::chrono::steady_clock::time_point since;
  caf::typed_response_promise<tool_result> promise;
};

struct supervisor_state {
  agent_supervisor_config config;
  agent_owner_actor owner;
  std::map<std::string, supervised_agent> agents;
  std::map<caf::actor_addr, std::string> by_address;
  /// Launches answered but not spawned yet, in order, with their serials.
  std::deque<std::pair<uint64_t, subagent_launch>> to_spawn;
  uint64_t launch_serials = 0;
  bool spawn_scheduled = false;
  size_t running = 0;
  agent_counts counts;
  agent_counts counts_sent;
  std::vector<agent_wait> waits;
  uint64_t wait_serials = 0;
  /// The owner ended: no launch is taken, and the supervisor quits once no agent runs.
  bool finishing = false;
  /// Agents stopped or detached at the owner's end that have not stopped yet.
  std::set<caf::actor_addr> leaving;
  static inline const char* name = "agent_supervisor";
};

using self_ptr = agent_supervisor_actor::stateful_pointer<supervisor_state>;

inline agent_counts contribution(const supervised_agent& a) {
  agent_counts c;
  if (a.running()) {
    c.background = a.waiting ? 0 : 1;
    c.awaited = a.reported ? 0 : 1;
  }
  return c;
}

// Changes an agent and keeps the counts right (O(1) per change, however many agents there are).
template <class Change>
void update(self_ptr self, supervised_agent& a, Change change) {
  auto& st = self->state;
  auto before = contribution(a);
  bool was_running = a.running();
  change(a);
  auto after = contribution(a);
  st.counts.background += after.background - before.background;
  st.counts.awaited += after.awaited - before.awaited;
  if (!was_running && a.running())
    ++st.running;
  else if (was_running && !a.running())
    --st.running;
}


/// Called last in a handler: the owner hears counts after the ends that changed them.
void publish_counts(self_ptr self);

/// The ids for an error message: a few, not a thousand.
std::string agent_ids(const supervisor_state& st);

/// A notification of an agent's end the supervisor writes itself (a crash, a stop, a launch
/// that could not start), its status from the reason.
task_notification end_notice(const supervised_agent& a, std::string reason, std::string text,
                             std::string error = {});

/// Tells the owner of an end; what it cannot take any more goes to its durable queue.
void forward(self_ptr self, const agent_descriptor& info, task_notification n, bool answered);

/// An agent ended: answered where someone waits, told to the owner in any case.
void record_end(self_ptr self, supervised_agent& a, task_notification n);

/// Answers every wait whose agents have ended.
void check_waits(self_ptr self);

/// The answer of a wait. `results_follow`: the results it took come as notifications instead.
tool_result wait_answer(self_ptr self, const agent_wait& w, const std::string& why,
                        bool results_follow = false);

/// A wait that ends without giving its results: they are told as notifications after all.
void release_taken(self_ptr self, const agent_wait& w);

/// Spawns the next launches, a few per call, and schedules the rest on a timer message (none
/// while finishing: what is left is spawned at once).
void spawn_some(self_ptr self);

/// The task tool: a launch checked and answered at once (a background one), its agent spawned
/// after; a resume's prompt given to the agent.
caf::result<tool_result> launch(self_ptr self, const tool_call& call);

/// task_wait.
caf::result<tool_result> wait_for(self_ptr self, const tool_call& call);

/// task_output and task_stop on an agent id.
caf::result<tool_result> agent_task_call(self_ptr self, const tool_call& call);

} // namespace troupe::agent_supervision
