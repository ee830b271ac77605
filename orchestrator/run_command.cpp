#include "orchestrator/run_command.hpp"

#include <atomic>
#include <chrono>
#include <future>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include "actors/agent.hpp"
#include "actors/http_engine.hpp"
#include "actors/http_model.hpp"
#include "actors/runtime.hpp"
#include "actors/scripted_model.hpp"
#include "orchestrator/permission_prompt.hpp"
#include "orchestrator/renderer.hpp"
#include "orchestrator/signals.hpp"
#include "tools/prompt.hpp"

namespace troupe {

int execute_run(run_settings settings, std::FILE* out) {
  block_termination_signals();
  if (settings.http_model)
    http_engine::warm_up();
  caf::actor_system_config cfg;
  configure_actor_system(cfg);
  caf::actor_system sys{cfg};

  // A tool denied by a bare rule is not offered at all.
  std::vector<tool_spec> offered;
  auto builtin = make_builtin_registry();
  for (auto& tool : builtin.tools())
    if (!settings.permissions.removes_tool(tool.name))
      offered.push_back(tool);
  auto registry = std::make_shared<const tool_registry>(std::move(offered));
  if (settings.permissions.mode == permission_mode::bypass)
    std::fprintf(stderr, "troupe: WARNING: permission mode bypass: every tool call runs without "
                         "asking (deny rules still hold)\n");
  spdlog::info("permission mode {}", to_string(settings.permissions.mode));
  auto session_dir = settings.troupe_home / "sessions" / settings.session_id;

  tool_context tools;
  tools.cwd = settings.cwd;
  tools.home = settings.home;
  tools.shell_program = settings.shell_program;
  tools.output_cap = settings.max_tool_output;
  tools.results_dir = session_dir / "tool-results";
  tools.tasks_dir = session_dir / "tasks";

  session_config session;
  session.session_id = settings.session_id;
  session.session_dir = session_dir;
  session.model_name = settings.model_name;
  session.system_prompt = build_system_prompt(*registry, settings.format);
  session.format = settings.format;
  session.cwd = settings.cwd;
  session.registry = registry;
  session.budget = settings.budget;
  session.max_steps = settings.max_steps;
  session.max_parallel_tools = settings.max_parallel_tools;
  session.history = std::move(settings.history);
  session.resumed_state = settings.resumed_state;
  session.initial_inputs.push_back(make_input(std::move(settings.prompt)));
  session.permissions = std::make_shared<const permission_policy>(settings.permissions);
  if (settings.ask_on_terminal)
    session.asker = spawn_terminal_asker(sys);

  std::optional<http_engine> engine;
  model_client_actor model;
  if (settings.http_model) {
    auto started = http_engine::start(sys);
    if (!started) {
      std::fprintf(stderr, "troupe: %s\n", started.error().c_str());
      return 2;
    }
    engine = std::move(*started);
    // The reply may take what the context budget keeps free for it.
    settings.http_model->provider.max_tokens =
      static_cast<int32_t>(settings.budget.output_reserve());
    model = spawn_http_model(sys, std::move(*settings.http_model), *engine);
  } else {
    model = spawn_scripted_model(sys, std::move(*settings.model_script));
  }
  auto agent = spawn_agent(sys, std::move(session), std::move(tools), std::move(model));

  // Shared with the renderer's thread, which may still be inside set_value when we return.
  auto ended = std::make_shared<std::promise<session_ended_event>>();
  auto ended_future = ended->get_future();
  auto renderer = spawn_renderer(sys, settings.render, out, agent,
                                 [ended](const session_ended_event& e) { ended->set_value(e); });

  std::atomic<int> signals_seen{0};
  signal_forwarder forwarder{[&](int sig) {
    if (signals_seen.fetch_add(1) == 0) {
      spdlog::info("signal {}: interrupting the run", sig);
      caf::anon_send<caf::message_priority::high>(agent, interrupt_atom::value);
    } else {
      caf::anon_send_exit(agent, caf::exit_reason::kill);
    }
  }};
  // Both from this thread, so the subscription is in place before the first event.
  caf::anon_send(agent, subscribe_atom::value, renderer);
  caf::anon_send(agent, start_atom::value);

  using namespace std::chrono_literals;
  int code = -1;
  while (code < 0) {
    if (ended_future.wait_for(50ms) == std::future_status::ready) {
      code = exit_code_for(ended_future.get().reason);
    } else if (signals_seen.load() > 1) {
      std::fprintf(stderr, "troupe: interrupted twice, stopped without finishing the run\n");
      sys.await_actors_before_shutdown(false);
      code = exit_code_for(terminal_reason::interrupted);
    }
  }
  if (engine)
    engine->stop();
  return code;
}

} // namespace troupe
