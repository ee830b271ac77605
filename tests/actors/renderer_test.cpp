// The CLI's renderer of a session: how a session that goes down without telling its end is
// reported.

#include <doctest/doctest.h>

#include <future>
#include <mutex>
#include <thread>

#include "orchestrator/renderer.hpp"
#include "support/agent_fixture.hpp"

using namespace troupe;
using namespace troupe::test;

namespace {

// Renders `session` into `out` (guarded by `lock`); the future is the end it reported. The
// renderer's handle is kept in `keep`, as `run` keeps it: the session's is gone with it.
std::future<session_ended_event> render(agent_fixture& f, session_actor session,
                                        output_format format, std::string& out, std::mutex& lock,
                                        event_sink_actor& keep) {
  auto ended = std::make_shared<std::promise<session_ended_event>>();
  auto future = ended->get_future();
  render_options options;
  options.format = format;
  render_sink sink;
  sink.write = [&](std::string_view text) {
    std::lock_guard<std::mutex> guard{lock};
    out += text;
    return true;
  };
  sink.on_end = [ended](const session_ended_event& e) { ended->set_value(e); };
  keep = spawn_renderer(f.actors.sys(), options, std::move(sink), session);
  caf::anon_send(session, subscribe_atom::value, keep);
  return future;
}

} // namespace

TEST_CASE("a session killed (stuck at a second interrupt) ends as interrupted, saying so") {
  for (auto format : {output_format::text, output_format::stream_json}) {
    agent_fixture f;
    f.config.initial_inputs.push_back(make_input("go"));
    auto model = spawn_scripted_model(f.actors.sys(),
                                      make_script({{{"text", "slow"}, {"delay_ms", 20000}}}));
    auto session = spawn_agent(f.actors.sys(), f.config, f.tools, model);
    f.sessions.push_back(session);
    std::string out;
    std::mutex lock;
    event_sink_actor renderer;
    auto ended = render(f, session, format, out, lock, renderer); // subscribed first, as `run`
    caf::anon_send(session, start_atom::value);
    for (int i = 0; i < 500; ++i) { // until the renderer has shown the prompt: a turn is on
      {
        std::lock_guard<std::mutex> guard{lock};
        if (out.find("go") != std::string::npos)
          break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
    caf::anon_send_exit(session, caf::exit_reason::kill);
    REQUIRE(ended.wait_for(std::chrono::seconds{10}) == std::future_status::ready);
    auto end = ended.get();
    CHECK(end.reason == terminal_reason::interrupted);
    CHECK(end.error_message == "stopped at a second interrupt, before the session had finished");
    CHECK(end.session_id == "test-session");
    std::lock_guard<std::mutex> guard{lock};
    CHECK(out.find("exit_reason") == std::string::npos);
    CHECK(out.find("stopped at a second interrupt") != std::string::npos);
  }
}
