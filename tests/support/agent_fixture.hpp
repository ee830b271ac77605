#pragma once
// A real actor system running one agent against a scripted model, in a temporary directory.

#include <map>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include "actors/agent.hpp"
#include "actors/scripted_model.hpp"
#include "store/transcript.hpp"
#include "support/test_support.hpp"

namespace troupe::test {

struct agent_fixture {
  temp_dir dir;
  actor_system_fixture actors;
  std::shared_ptr<recording> events = std::make_shared<recording>();
  /// When set, every subagent's events are recorded here too.
  std::shared_ptr<recording> child_events;
  session_config config;
  tool_context tools;
  std::vector<std::shared_ptr<subagent_factory>> factories;
  /// Every session started, stopped at the end so that a failed check cannot leave one waiting
  /// for input and the actor system's shutdown waiting for it.
  std::vector<session_actor> sessions;

  agent_fixture(const agent_fixture&) = delete;
  agent_fixture& operator=(const agent_fixture&) = delete;
  ~agent_fixture() {
    for (auto& session : sessions)
      caf::anon_send_exit(session, caf::exit_reason::user_shutdown);
  }

  agent_fixture() {
    config.session_id = "test-session";
    config.session_dir = dir / "home/sessions/test-session";
    config.cwd = dir / "work";
    config.model_name = "scripted:test";
    config.registry = std::make_shared<const tool_registry>(make_builtin_registry());
    std::filesystem::create_directories(config.cwd);
    tools.cwd = config.cwd;
    tools.notification_queue = config.session_dir / "queue.jsonl";
  }

  /// Lets the agent launch subagents: a task call's "model" names one of these scripts
  /// ("scripted:NAME"); each subagent is a real session with its own transcript.
  void enable_subagents(std::map<std::string, std::vector<nlohmann::json>> scripts) {
    auto shared = std::make_shared<std::map<std::string, std::vector<nlohmann::json>>>(
      std::move(scripts));
    auto base = config;
    auto tool_ctx = tools;
    auto factory = std::make_shared<subagent_factory>();
    auto recorder = child_events;
    *factory = [shared, base, tool_ctx, recorder,
                weak = std::weak_ptr<subagent_factory>(factory)](
                 caf::actor_system& sys, const subagent_launch& launch,
                 agent_parent_actor parent) -> expected<session_actor> {
      auto name = launch.model.rfind("scripted:", 0) == 0 ? launch.model.substr(9) : "";
      auto lines = shared->find(name);
      if (lines == shared->end())
        return failure{"no test script named '" + launch.model + "'"};
      session_config child = base;
      child.session_id = launch.agent_id;
      child.session_dir = launch.session_dir;
      child.initial_inputs = {make_input(launch.prompt, message_origin::parent)};
      for (auto& next : launch.follow_ups)
        child.initial_inputs.push_back(make_input(next, message_origin::parent));
      child.subscribers.clear();
      if (recorder)
        child.subscribers.push_back(spawn_recorder(sys, recorder));
      child.hooks.clear();
      child.interactive = false;
      child.wait_for_notifications = false;
      child.idle_timeout = {};
      child.depth = launch.depth;
      child.parent = parent;
      child.parent_queue = launch.session_dir.parent_path().parent_path() / "queue.jsonl";
      if (auto self = weak.lock())
        child.spawn_subagent = *self;
      if (launch.resume) {
        auto loaded = load_transcript(launch.session_dir / "transcript.jsonl");
        if (!loaded)
          return failure{loaded.error()};
        child.history = std::move(loaded->messages);
      }
      auto model = spawn_scripted_model(sys, make_script(lines->second));
      auto child_tools = tool_ctx;
      child_tools.notification_queue = launch.session_dir / "queue.jsonl";
      return spawn_agent(sys, child, child_tools, model);
    };
    config.spawn_subagent = *factory;
    factories.push_back(factory);
  }

  /// Spawns and starts the agent with the given inputs queued.
  session_actor start(const std::vector<nlohmann::json>& lines,
                      const std::vector<std::string>& prompts) {
    return start_with(spawn_scripted_model(actors.sys(), make_script(lines)), prompts);
  }

  /// The same, driving a model client of the test's own.
  session_actor start_with(model_client_actor model, const std::vector<std::string>& prompts) {
    for (auto& p : prompts)
      config.initial_inputs.push_back(make_input(p));
    config.subscribers.push_back(spawn_recorder(actors.sys(), events));
    auto session = spawn_agent(actors.sys(), config, tools, model);
    caf::anon_send(session, start_atom::value);
    sessions.push_back(session);
    return session;
  }

  /// Runs the agent to its end and returns the terminal event.
  session_ended_event run(const std::vector<nlohmann::json>& lines,
                          const std::vector<std::string>& prompts = {"do the task"}) {
    start(lines, prompts);
    return events->wait_for_end();
  }

  std::vector<nlohmann::json> transcript() {
    return read_jsonl(config.session_dir / "transcript.jsonl");
  }

  nlohmann::json state() {
    return read_json(config.session_dir / "state.json");
  }

  /// Returns "role" or "role:origin" of every transcript line, in order.
  std::vector<std::string> transcript_roles() {
    std::vector<std::string> out;
    for (auto& m : transcript())
      out.push_back(m["role"].get<std::string>() +
                    (m.contains("origin") ? ":" + m["origin"].get<std::string>() : ""));
    return out;
  }
};

/// A scripted reply that runs one shell command through a markdown block.
inline nlohmann::json shell_reply(const std::string& command, const std::string& text = "") {
  return {{"text", text + "```shell\n" + command + "\n```"}};
}

/// A scripted reply that calls one tool natively.
inline nlohmann::json tool_reply(const std::string& tool, nlohmann::json input) {
  return {{"text", ""},
          {"tool_calls", nlohmann::json::array({{{"name", tool}, {"input", std::move(input)}}})}};
}

/// A scripted reply without any tool.
inline nlohmann::json text_reply(const std::string& text) { return {{"text", text}}; }

} // namespace troupe::test
