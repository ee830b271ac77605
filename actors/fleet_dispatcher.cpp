#include "actors/fleet_dispatcher.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <optional>
#include <unordered_map>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "context/token_budget.hpp"
#include "store/session_paths.hpp"

namespace troupe {

namespace {

/// Tasks launched per message: the dispatcher's mailbox (the running tasks' ends) is read
/// between batches, so a fleet of ten thousand starts without holding its ends back.
constexpr size_t launch_batch = 64;

struct running_task {
  fleet_task task;
  session_actor session;
  std::function<void()> ended;
};

struct fleet_dispatcher_state {
  std::shared_ptr<fleet_dispatcher_config> config;
  std::deque<fleet_task> queue;
  std::unordered_map<std::string, running_task> running; // by session id
  /// The session id of each running task's actor: a down message finds its task at once (a
  /// scan of every running task per end made ten thousand ends cost 10^8 comparisons).
  std::unordered_map<caf::actor_id, std::string> by_actor;
  fleet_progress progress;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  bool spawn_pending = false;
  bool ended = false;
};

using self_ptr = fleet_dispatcher_actor::stateful_pointer<fleet_dispatcher_state>;

int64_t all_tokens(const token_usage& usage) {
  return usage.input_tokens + usage.output_tokens + usage.cache_read_tokens +
         usage.cache_write_tokens;
}

std::string dump(const nlohmann::json& line) {
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void add_metadata(nlohmann::json& line, const fleet_task& task) {
  if (!task.metadata.empty())
    line["metadata"] = nlohmann::json::parse(task.metadata, nullptr, false);
}

fleet_progress snapshot(self_ptr self) {
  auto& st = self->state;
  auto progress = st.progress;
  progress.running = static_cast<int64_t>(st.running.size());
  progress.queued = static_cast<int64_t>(st.queue.size());
  progress.elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now() - st.started)
                          .count();
  return progress;
}

void write_result(self_ptr self, const std::string& line) {
  auto& config = *self->state.config;
  // A result that cannot be written is not lost silently: a rerun writes it (a task whose
  // session ended gets its line from its files) or runs the task.
  if (auto written = config.results.append(line); !written)
    spdlog::error("fleet: {}; a rerun of the fleet writes that task's line", written.error());
  if (config.on_result)
    config.on_result(line);
}

bool budget_spent(const fleet_dispatcher_state& st) {
  const auto& config = *st.config;
  return (config.budget_tokens > 0 && all_tokens(st.progress.usage) >= config.budget_tokens) ||
         (config.budget_usd > 0 && st.progress.cost_usd >= config.budget_usd);
}

// Ends the fleet once nothing runs and nothing more will start.
void end_if_done(self_ptr self) {
  auto& st = self->state;
  if (st.ended || !st.running.empty() || (!st.queue.empty() && !st.progress.stopping))
    return;
  st.ended = true;
  auto last = snapshot(self);
  if (st.config->on_end)
    st.config->on_end(last);
  self->quit();
}

// A task that is over without running (see fleet_settled): its line, counted.
bool write_settled(self_ptr self, const fleet_task& task) {
  auto& st = self->state;
  if (!st.config->settled)
    return false;
  auto line = st.config->settled(task);
  if (!line)
    return false;
  write_result(self, *line);
  auto parsed = nlohmann::json::parse(*line, nullptr, false);
  if (parsed.is_object() && parsed.value("terminal_reason", "") == "completed" &&
      !parsed.contains("error"))
    ++st.progress.completed;
  else
    ++st.progress.failed;
  ++st.progress.ended_here;
  return true;
}

// The budget is spent: the tasks still queued will not start, and say so (a task whose session
// had already ended gets its own line instead).
void refuse_queued(self_ptr self) {
  auto& st = self->state;
  st.progress.budget_spent = true;
  while (!st.queue.empty()) {
    auto task = std::move(st.queue.front());
    st.queue.pop_front();
    if (auto busy = st.config->busy ? st.config->busy(task) : std::string{}; !busy.empty()) {
      spdlog::warn("fleet: task {} left for a rerun: {}", task.id, busy);
      ++st.progress.left;
      continue;
    }
    if (write_settled(self, task))
      continue;
    write_result(self, fleet_error_line(task, task_session_id(st.config->fleet_id, task.id),
                                        "budget"));
    ++st.progress.budget;
  }
}

void launch_some(self_ptr self) {
  auto& st = self->state;
  auto& config = *st.config;
  st.spawn_pending = false;
  size_t started = 0;
  while (!st.progress.stopping && !st.queue.empty() && st.running.size() < config.concurrency &&
         started < launch_batch) {
    if (budget_spent(st)) {
      refuse_queued(self);
      break;
    }
    auto task = std::move(st.queue.front());
    st.queue.pop_front();
    ++started;
    auto session_id = task_session_id(config.fleet_id, task.id);
    auto leave = [&](const std::string& why) {
      spdlog::warn("fleet: task {} left for a rerun: {}", task.id, why);
      ++st.progress.left;
    };
    if (auto busy = config.busy ? config.busy(task) : std::string{}; !busy.empty()) {
      leave(busy);
      continue;
    }
    if (write_settled(self, task))
      continue;
    auto launched = config.launch(self->system(), task);
    if (launched && !launched->not_now.empty()) {
      leave(launched->not_now);
      continue;
    }
    if (!launched) {
      write_result(self, fleet_error_line(task, session_id, launched.error()));
      ++st.progress.failed;
      ++st.progress.ended_here;
      continue;
    }
    auto session = launched->session;
    self->monitor(session);
    st.by_actor.emplace(session.id(), session_id);
    // From this actor, in this order: the subscription is in place before the first event.
    self->send(session, subscribe_atom::value, caf::actor_cast<event_sink_actor>(self));
    self->send(session, start_atom::value);
    st.running.emplace(session_id,
                       running_task{std::move(task), session, std::move(launched->ended)});
  }
  if (!st.progress.stopping && !st.queue.empty() && st.running.size() < config.concurrency) {
    st.spawn_pending = true;
    self->send(self, spawn_atom::value);
  }
  end_if_done(self);
}

void schedule_launches(self_ptr self) {
  auto& st = self->state;
  if (st.spawn_pending || st.progress.stopping || st.queue.empty())
    return;
  st.spawn_pending = true;
  self->send(self, spawn_atom::value);
}

void on_ended(self_ptr self, const session_ended_event& ended) {
  auto& st = self->state;
  auto at = st.running.find(ended.session_id);
  if (at == st.running.end())
    return;
  auto task = std::move(at->second.task);
  if (at->second.ended)
    at->second.ended();
  st.by_actor.erase(at->second.session.id());
  st.running.erase(at);
  st.progress.usage += ended.usage;
  // This run's cost: what a resumed session cost before is not this fleet run's to count.
  st.progress.cost_usd += ended.cost_usd;
  if (!ended.cost_known)
    st.progress.cost_known = false;
  // Stopped by Ctrl+C: its state is on disk and a rerun resumes it; a result now would make
  // the rerun skip it. The same for a task the descriptors ran out on: that may pass.
  bool out_of_descriptors = ended.reason == terminal_reason::error &&
                            ended.error_message.find(std::strerror(EMFILE)) != std::string::npos;
  if ((st.progress.stopping && ended.reason == terminal_reason::interrupted) ||
      out_of_descriptors) {
    if (out_of_descriptors) {
      spdlog::warn("fleet: task {} left for a rerun: {}", task.id, ended.error_message);
      ++st.progress.left;
    }
    schedule_launches(self);
    end_if_done(self);
    return;
  }
  write_result(self, fleet_result_line(task, ended));
  ++st.progress.ended_here;
  if (ended.reason == terminal_reason::completed)
    ++st.progress.completed;
  else
    ++st.progress.failed;
  if (budget_spent(st) && !st.queue.empty() && !st.progress.stopping)
    refuse_queued(self);
  schedule_launches(self);
  end_if_done(self);
}

fleet_dispatcher_actor::behavior_type fleet_dispatcher(
  self_ptr self, std::shared_ptr<fleet_dispatcher_config> config) {
  auto& st = self->state;
  st.config = std::move(config);
  st.progress = st.config->start;
  st.progress.total = st.config->start.total;
  for (auto& task : st.config->tasks)
    st.queue.push_back(std::move(task));
  st.config->tasks.clear();
  self->set_down_handler([=](caf::down_msg& down) {
    auto& state = self->state;
    auto known = state.by_actor.find(down.source.id());
    if (known == state.by_actor.end())
      return; // its end was heard: the usual case
    auto at = state.running.find(known->second);
    state.by_actor.erase(known);
    if (at == state.running.end())
      return;
    // Ended without its terminal event (it failed inside): the task still gets its line.
    auto task = std::move(at->second.task);
    auto session_id = at->first;
    if (at->second.ended)
      at->second.ended();
    state.running.erase(at);
    write_result(self, fleet_error_line(task, session_id,
                                        "the agent stopped without a result (" +
                                          to_string(down.reason) + ")"));
    ++state.progress.failed;
    ++state.progress.ended_here;
    schedule_launches(self);
    end_if_done(self);
  });
  return {
    [=](start_atom) {
      if (self->state.config->on_progress)
        self->delayed_send(self, self->state.config->progress_every, progress_atom::value);
      launch_some(self);
    },
    [=](spawn_atom) { launch_some(self); },
    [=](progress_atom) {
      auto& state = self->state;
      if (state.ended)
        return;
      state.config->on_progress(snapshot(self));
      self->delayed_send(self, state.config->progress_every, progress_atom::value);
    },
    [=](interrupt_atom) {
      auto& state = self->state;
      if (state.progress.stopping)
        return;
      state.progress.stopping = true;
      for (auto& [id, task] : state.running)
        self->send<caf::message_priority::high>(task.session, interrupt_atom::value);
      end_if_done(self);
    },
    [=](const session_ended_event& ended) { on_ended(self, ended); },
    [](const session_started_event&) {},
    [](const turn_ended_event&) {},
    [](const message_event&) {},
    [](const notice_event&) {},
    [](const generation_progress&) {},
    [](const session_status_event&) {},
    [](const hook_run_event&) {},
  };
}

} // namespace

std::string fleet_result_line(const fleet_task& task, const session_ended_event& ended) {
  nlohmann::json line = {{"id", task.id},
                         {"session_id", ended.session_id},
                         {"terminal_reason", to_string(ended.reason)},
                         {"result", ended.result_text},
                         {"num_turns", ended.state.turn_count},
                         {"num_steps", ended.state.total_steps},
                         {"usage", ended.total_usage},
                         {"cost_usd", ended.cost_known ? nlohmann::json(ended.total_cost_usd)
                                                       : nlohmann::json(nullptr)},
                         {"duration_ms", ended.duration_ms}};
  if (ended.reason == terminal_reason::error || ended.reason == terminal_reason::hook_stopped)
    line["error"] = ended.error_message;
  else if (ended.reason == terminal_reason::permission_blocked && !ended.permission_denials.empty())
    line["error"] = "permission denied: " + ended.permission_denials.back().tool_name;
  add_metadata(line, task);
  return dump(line);
}

std::string fleet_error_line(const fleet_task& task, const std::string& session_id,
                             const std::string& error) {
  nlohmann::json line = {{"id", task.id}, {"error", error}};
  if (!session_id.empty())
    line["session_id"] = session_id;
  add_metadata(line, task);
  return dump(line);
}

fleet_dispatcher_actor spawn_fleet_dispatcher(caf::actor_system& sys,
                                              std::shared_ptr<fleet_dispatcher_config> config) {
  return sys.spawn(fleet_dispatcher, std::move(config));
}

} // namespace troupe
