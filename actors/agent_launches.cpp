// The agent supervisor's launches: the task tool's call checked and answered at once, the
// agent spawned a few per timer message after it, a prompt for an agent that runs or is still
// queued to spawn given to it.

#include <algorithm>
#include <chrono>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include "actors/agent_supervisor_state.hpp"
#include "store/ids.hpp"
#include "tools/tool_spec.hpp"

namespace troupe::agent_supervision {

// Spawned per tick, so that launches and ends queued behind are answered in between.
constexpr size_t spawns_per_tick = 16;

// The next launches: spawned a few per message, so that the step's calls were all answered
// first and nothing waits long behind a burst.
void spawn_some(self_ptr self) {
  auto& st = self->state;
  st.spawn_scheduled = false;
  for (size_t n = 0; n < spawns_per_tick && !st.to_spawn.empty(); ++n) {
    auto [serial, launch] = std::move(st.to_spawn.front());
    st.to_spawn.pop_front();
    auto found = st.agents.find(launch.agent_id);
    if (found == st.agents.end() || !found->second.running() || found->second.actor ||
        found->second.launch_serial != serial)
      continue; // stopped before it started, or launched again since
    auto& a = found->second;
    auto spawned = st.config.spawn_subagent(self->system(), launch, agent_parent_actor{self});
    if (!spawned) {
      record_end(self, a,
                 end_notice(a, "error", "[the agent could not start: " + spawned.error() + "]",
                            spawned.error()));
      continue;
    }
    a.actor = *spawned;
    st.by_address[a.actor.address()] = a.info.id;
    self->monitor(a.actor);
    caf::anon_send(a.actor, start_atom::value);
    // Told once it runs: an agent that could not start, or was stopped first, never started;
    // and a reply's thousand launches are answered before a thousand notices are printed.
    self->send(st.owner, notice_event{st.config.owner_id, "agent_started",
                                      "agent " + a.info.id + " (" +
                                        (a.info.foreground ? "foreground" : "background") +
                                        "): " + a.info.description});
  }
  if (!st.to_spawn.empty() && !st.finishing) { // finishing spawns what is left at once
    st.spawn_scheduled = true;
    self->delayed_send(self, std::chrono::microseconds{0}, spawn_atom::value);
  }
  publish_counts(self);
}

namespace {

// A description is one line of a list: a newline or other control character becomes a space.
std::string one_line(std::string text) {
  for (auto& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      c = ' ';
  return text;
}

// The type a launch names, as the factory takes it: "" for troupe's own subagent
// (`general-purpose`, unless a file defines that name), or an error listing the known types.
expected<std::string> launch_type(const supervisor_state& st, const std::string& name) {
  const auto* types = st.config.types.get();
  auto defined = [&](const std::string& wanted) {
    return types != nullptr && std::any_of(types->begin(), types->end(), [&](const agent_type& t) {
             return t.name == wanted;
           });
  };
  if (name.empty() || (name == general_agent_type && !defined(name)))
    return std::string{};
  if (defined(name))
    return name;
  std::string known = general_agent_type;
  if (types != nullptr)
    for (auto& type : *types)
      if (type.name != general_agent_type)
        known += ", " + type.name;
  return failure{"unknown subagent_type '" + one_line(name.substr(0, char_boundary(name, 100))) +
                 "'; the known types: " + known};
}

std::string unused_agent_id(const supervisor_state& st) {
  for (;;) {
    auto id = "agent_" + random_hex(6);
    // Unique among this owner's agents, of this run and of earlier runs.
    if (!st.agents.count(id) && !std::filesystem::exists(st.config.owner_dir.agent(id).dir()))
      return id;
  }
}

} // namespace

caf::result<tool_result> launch(self_ptr self, const tool_call& call) {
  auto& st = self->state;
  if (st.finishing)
    return error_result("cannot launch a subagent: this session is ending");
  if (const auto* spec = st.config.registry->find(call.name))
    if (auto problem = validate_input(*spec, call.input))
      return error_result(*problem);
  const auto& input = call.input;
  auto prompt = input.value("prompt", std::string{});
  if (prompt.find_first_not_of(" \t\r\n") == std::string::npos)
    return error_result("the task needs a prompt: the whole task, self-contained");
  auto resume = input.value("resume", std::string{});
  if (input.contains("resume") && resume.empty())
    return error_result("resume needs the id of an agent to continue (or leave it out to "
                        "launch a new one)");
  if (auto tools = input.find("tools"); tools != input.end())
    for (auto& t : *tools)
      if (!t.is_string())
        return error_result("tools must be tool names, strings; got " + t.dump());
  auto type = launch_type(st, input.value("subagent_type", std::string{}));
  if (!type)
    return error_result(type.error());
  if (!resume.empty()) {
    // An id names a directory under agents/: never a path out of it.
    if (!is_valid_session_id(resume))
      return error_result("no agent '" + resume + "' in this session (agents: " +
                          agent_ids(st) + ")");
    auto c = st.agents.find(resume);
    if (c != st.agents.end() && c->second.running()) {
      if (!c->second.actor) {
        // Not spawned yet: the prompt goes with its launch, as its next job.
        for (auto& [serial, pending] : st.to_spawn)
          if (pending.agent_id == resume && serial == c->second.launch_serial) {
            pending.follow_ups.push_back(prompt);
            return tool_result{"Sent the prompt to agent " + resume + ", which is starting; "
                               "you will get a <task-notification> when it ends.",
                               false, 0, false};
          }
        return error_result("agent " + resume + " is still starting; resume it after its "
                            "<task-notification>, or wait for it with task_wait");
      }
      // Alive: the prompt joins its queue, and its end is reported as usual. It may have ended
      // a moment ago, its notification still on the way: the model is told to wait for it.
      auto promise = self->make_response_promise<tool_result>();
      auto ended = error_result("agent " + resume + " has just ended; its result is on the way "
                                "as a <task-notification>. Resume it again after that.");
      self->request(c->second.actor, std::chrono::seconds{10}, control_atom::value,
                    control_command::input, prompt)
        .then(
          [=](const control_reply& answer) mutable {
            if (answer.status != control_status::ok) {
              promise.deliver(ended);
              return;
            }
            if (auto again = self->state.agents.find(resume);
                again != self->state.agents.end() && again->second.running() &&
                !again->second.stopping)
              update(self, again->second, [](supervised_agent& x) { x.reported = false; });
            publish_counts(self);
            promise.deliver(tool_result{"Sent the prompt to agent " + resume +
                                          ", which is still running; you will get a "
                                          "<task-notification> when it ends.",
                                        false, 0, false});
          },
          [=](caf::error&) mutable { promise.deliver(ended); });
      return promise;
    }
    if (c == st.agents.end() &&
        !holds_session(st.config.owner_dir.agent(resume)))
      return error_result("no agent '" + resume + "' in this session (agents: " +
                          agent_ids(st) + ")");
  }
  if (st.config.depth + 1 > st.config.max_depth)
    return error_result("cannot launch a subagent: this agent is at depth " +
                        std::to_string(st.config.depth) + " and the limit is " +
                        std::to_string(st.config.max_depth) +
                        " (raise it with --max-agent-depth); do the work yourself");
  if (st.running >= st.config.max_children)
    return error_result("cannot launch a subagent: the limit of " +
                        std::to_string(st.config.max_children) + " running at once is reached " +
                        (st.config.max_children < max_agents_cap
                           ? "(raise it with --max-agents); "
                           : "(the most --max-agents allows); ") +
                        "wait for a <task-notification> first");
  subagent_launch l;
  l.resume = !resume.empty();
  l.agent_id = l.resume ? resume : unused_agent_id(st);
  l.prompt = prompt;
  l.call_id = call.id;
  l.description = input.contains("description")
                    ? one_line(input.value("description", std::string{}))
                    : one_line(prompt.substr(0, char_boundary(prompt, 60)));
  if (auto known = st.agents.find(l.agent_id); l.resume && !input.contains("description") &&
                                               known != st.agents.end() &&
                                               !known->second.info.description.empty())
    l.description = known->second.info.description;
  l.model = input.value("model", std::string{});
  l.agent_type = *type;
  l.max_steps = input.value("max_steps", 0);
  if (auto tools = input.find("tools"); tools != input.end() && tools->is_array())
    for (auto& t : *tools)
      if (t.is_string())
        l.tools.push_back(t.get<std::string>());
  l.session_dir = st.config.owner_dir.agent(l.agent_id).dir();
  l.depth = st.config.depth + 1;
  bool background = input.value("mode", std::string{"foreground"}) == "background";
  auto [entry, fresh] = st.agents.try_emplace(l.agent_id);
  auto& a = entry->second;
  if (fresh)
    a.info.state.clear(); // not running yet: the counts see it start below
  if (a.actor)
    st.by_address.erase(a.actor.address());
  auto serial = ++st.launch_serials;
  update(self, a, [&](supervised_agent& x) {
    auto earlier_result = std::move(x.info.result); // task_output still reads it meanwhile
    x = supervised_agent{};
    x.info.id = l.agent_id;
    x.info.description = l.description;
    x.info.foreground = !background;
    x.info.result = std::move(earlier_result);
    x.launch_serial = serial;
  });
  st.to_spawn.emplace_back(serial, l);
  if (!st.spawn_scheduled) {
    st.spawn_scheduled = true;
    self->delayed_send(self, std::chrono::microseconds{0}, spawn_atom::value);
  }
  if (background) {
    publish_counts(self);
    return tool_result{"Started agent " + l.agent_id +
                         " in the background. You will get a <task-notification> when it ends; "
                         "keep working meanwhile (task_wait waits for agents).",
                       false, 0, false};
  }
  auto promise = self->make_response_promise<tool_result>();
  update(self, a, [&](supervised_agent& x) { x.waiting = promise; });
  publish_counts(self);
  return promise;
}

} // namespace troupe::agent_supervision
