// The agent supervisor's waits: task_wait, and task_output / task_stop on an agent id.

#include <algorithm>
#include <chrono>

#include "actors/agent_supervisor_state.hpp"
#include "tools/task_wait.hpp"
#include "tools/tool_spec.hpp"

namespace troupe::agent_supervision {

namespace {

bool wait_done(const supervisor_state& st, const agent_wait& w) {
  size_t ended = 0;
  for (auto& id : w.ids)
    if (auto f = st.agents.find(id); f == st.agents.end() || !f->second.running())
      ++ended;
  return w.any ? ended > 0 : ended == w.ids.size();
}

caf::result<tool_result> start_wait(self_ptr self, agent_wait w,
                                    std::chrono::milliseconds timeout) {
  auto& st = self->state;
  if (wait_done(st, w) || timeout.count() == 0)
    return wait_answer(self, w, wait_done(st, w) ? "" : " (not waiting: timeout 0)");
  w.serial = ++st.wait_serials;
  w.since = std::chrono::steady_clock::now();
  w.promise = self->make_response_promise<tool_result>();
  auto promise = w.promise;
  self->delayed_send(self, timeout, due_atom::value, w.serial);
  st.waits.push_back(std::move(w));
  return promise;
}

} // namespace

// The answer of a wait: each agent's state and, for those that ended while it waited, the
// result; past the budget, a line each.
tool_result wait_answer(self_ptr self, const agent_wait& w, const std::string& why,
                        bool results_follow) {
  auto& st = self->state;
  std::string out;
  size_t ended = 0;
  size_t shown = 0;
  for (auto& id : w.ids) {
    auto found = st.agents.find(id);
    if (found == st.agents.end())
      continue;
    const auto& info = found->second.info;
    bool taken = std::find(w.taken.begin(), w.taken.end(), id) != w.taken.end();
    if (!found->second.running())
      ++ended;
    out += (out.empty() ? "" : "\n\n") + id + " (" + info.description + "): " + info.state;
    if (!info.reason.empty() && info.reason != "completed" && info.reason != "backgrounded")
      out += " (" + info.reason + (info.error.empty() ? "" : ": " + info.error) + ")";
    if (found->second.running()) {
      if (found->second.stopping)
        out += " (stopping: task_stop)";
      continue;
    }
    if (found->second.stopping) {
      out += "\n(stopped with task_stop: no result)";
      continue;
    }
    if (taken && results_follow) {
      out += "\n(its result follows in a <task-notification>)";
      continue;
    }
    if (!taken && !w.whole_result) {
      out += "\n(its result was given earlier, by a <task-notification> or a task_wait; "
             "task_output " + id + " reads it again)";
      continue;
    }
    if (!w.whole_result && shown + info.result.size() > default_notification_budget) {
      out += "\n(result: " + std::to_string(info.result.size()) +
             " bytes, not shown: read it with task_output " + id + ")";
      continue;
    }
    shown += info.result.size();
    out += "\n" + (info.result.empty() ? std::string{"(no final answer)"} : info.result);
  }
  if (!w.whole_result)
    out += "\n\n" + std::to_string(ended) + " of " + std::to_string(w.ids.size()) +
           " agent(s) ended" + why;
  else if (!why.empty())
    out += why;
  tool_result r;
  r.output = out;
  return r;
}

void check_waits(self_ptr self) {
  auto& st = self->state;
  for (size_t i = 0; i < st.waits.size();) {
    if (!wait_done(st, st.waits[i])) {
      ++i;
      continue;
    }
    auto w = std::move(st.waits[i]);
    st.waits.erase(st.waits.begin() + static_cast<std::ptrdiff_t>(i));
    w.promise.deliver(wait_answer(self, w, ""));
  }
}

caf::result<tool_result> wait_for(self_ptr self, const tool_call& call) {
  auto& st = self->state;
  if (const auto* spec = st.config.registry->find(call.name))
    if (auto problem = validate_input(*spec, call.input))
      return error_result(*problem);
  agent_wait w;
  w.any = call.input.value("mode", std::string{"all"}) == "any";
  if (auto ids = call.input.find("agent_ids"); ids != call.input.end() && !ids->empty()) {
    for (auto& id : *ids) {
      if (!id.is_string())
        return error_result("agent_ids must be agent ids, strings; got " + id.dump());
      auto name = id.get<std::string>();
      if (!st.agents.count(name))
        return error_result("no agent '" + name + "' in this session (agents: " +
                            agent_ids(st) + ")");
      w.ids.push_back(name);
    }
  } else {
    for (auto& [id, a] : st.agents)
      if (a.running())
        w.ids.push_back(id);
    if (w.ids.empty())
      return tool_result{"No agent is running: nothing to wait for.", false, 0, false};
  }
  return start_wait(self, std::move(w), task_wait_timeout(call.input));
}

// task_output and task_stop on an agent id.
caf::result<tool_result> agent_task_call(self_ptr self, const tool_call& call) {
  auto& st = self->state;
  if (const auto* spec = st.config.registry->find(call.name))
    if (auto problem = validate_input(*spec, call.input))
      return error_result(*problem);
  if (!call.input.is_object() || !call.input.contains("task_id") ||
      !call.input["task_id"].is_string())
    return error_result("task_id must be the agent's id, a string");
  auto id = call.input["task_id"].get<std::string>();
  auto found = st.agents.find(id);
  if (found == st.agents.end())
    return error_result("no agent '" + id + "' in this session (agents: " + agent_ids(st) + ")");
  auto& a = found->second;
  if (call.name == "task_stop") {
    if (a.stopping)
      return tool_result{"Agent " + id + " is already stopping.", false, 0, false};
    if (!a.running())
      return error_result("agent " + id + " has already ended (" + a.info.state + ")");
    update(self, a, [](supervised_agent& x) {
      x.reported = true;
      x.stopping = true;
    });
    if (a.actor)
      self->send_exit(a.actor, caf::exit_reason::user_shutdown);
    else
      record_end(self, a, end_notice(a, "interrupted", "[stopped before it started]"));
    publish_counts(self);
    return tool_result{"Stopped agent " + id + "; no notification follows.", false, 0, false};
  }
  agent_wait w;
  w.ids = {id};
  w.any = true;
  w.whole_result = true;
  auto block_input = call.input.find("block");
  bool block = block_input == call.input.end() || !block_input->is_boolean() ||
               block_input->get<bool>();
  if (!a.running())
    return wait_answer(self, w, "");
  if (!block)
    return wait_answer(self, w, "\n(still running)");
  return start_wait(self, std::move(w), task_wait_timeout(call.input));
}

// A wait that ends without giving its results (interrupted, the owner ending): the results it
// had taken are told as notifications after all (to the owner's queue once it has ended).
void release_taken(self_ptr self, const agent_wait& w) {
  auto& st = self->state;
  for (auto& id : w.taken)
    if (auto f = st.agents.find(id); f != st.agents.end()) {
      auto n = end_notice(f->second, f->second.info.reason, f->second.info.result,
                          f->second.info.error);
      n.usage = f->second.info.usage;
      auto counted = f->second.info;
      counted.cost_usd = 0; // counted when it ended
      forward(self, counted, std::move(n), false);
    }
}

} // namespace troupe::agent_supervision
