#pragma once
// A real actor system running one agent against a scripted model, in a temporary directory.

#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include "actors/agent.hpp"
#include "actors/scripted_model.hpp"
#include "support/test_support.hpp"

namespace troupe::test {

struct agent_fixture {
  temp_dir dir;
  actor_system_fixture actors;
  std::shared_ptr<recording> events = std::make_shared<recording>();
  session_config config;
  tool_context tools;

  agent_fixture() {
    config.session_id = "test-session";
    config.session_dir = dir / "home/sessions/test-session";
    config.cwd = dir / "work";
    config.model_name = "scripted:test";
    config.registry = std::make_shared<const tool_registry>(make_builtin_registry());
    std::filesystem::create_directories(config.cwd);
    tools.cwd = config.cwd;
  }

  /// Spawns and starts the agent with the given inputs queued.
  session_actor start(const std::vector<nlohmann::json>& lines,
                      const std::vector<std::string>& prompts) {
    for (auto& p : prompts)
      config.initial_inputs.push_back(make_input(p));
    config.subscribers.push_back(spawn_recorder(actors.sys(), events));
    auto model = spawn_scripted_model(actors.sys(), make_script(lines));
    auto session = spawn_agent(actors.sys(), config, tools, model);
    caf::anon_send(session, start_atom::value);
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
    return nlohmann::json::parse(read_file(config.session_dir / "state.json"));
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
