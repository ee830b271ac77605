// The edges of the delivery rules: interrupts while idle, sessions that wait for notifications,
// several notifications at a turn boundary, subagents left to finish, background shell tasks
// and notifications still undelivered when a session ends.

#include <doctest/doctest.h>

#include <thread>

#include <caf/scoped_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "store/notification_queue.hpp"
#include "support/agent_fixture.hpp"

using namespace troupe;
using namespace troupe::test;
using nlohmann::json;
using strings = std::vector<std::string>;

namespace {

task_notification external(const std::string& text) {
  task_notification n;
  n.id = "ntf_" + text;
  n.source = "external";
  n.description = "about " + text;
  n.text = text;
  return n;
}

json background_task(const std::string& model) {
  return {{"text", ""},
          {"tool_calls",
           json::array({{{"name", "task"},
                         {"input", {{"prompt", "work"}, {"mode", "background"}, {"model", model}}}}})}};
}

json slow_text(const std::string& text, int delay_ms) {
  return {{"text", text}, {"delay_ms", delay_ms}};
}

control_reply control(session_actor session, caf::actor_system& sys, control_command command) {
  caf::scoped_actor self{sys};
  control_reply answer;
  self->request(session, std::chrono::seconds{5}, control_atom::value, command, std::string{})
    .receive([&](const control_reply& a) { answer = a; },
             [&](caf::error& err) { answer = control_error(sys.render(err)); });
  return answer;
}

} // namespace

TEST_CASE("an interrupt while a headless run waits for its subagents ends it, interrupted") {
  agent_fixture f;
  f.enable_subagents({{"child", {slow_text("never", 20000)}}});
  auto session = f.start({background_task("scripted:child"), text_reply("waiting for it")}, {"go"});
  REQUIRE(wait_until([&] { return f.transcript().size() == 4; })); // launched, now idle
  CHECK(control(session, f.actors.sys(), control_command::interrupt) ==
        control_ok("interrupted: the run ended"));
  auto ended = f.events->wait_for_end();
  CHECK(ended.reason == terminal_reason::interrupted);
  // The child was stopped with it, and says so in the parent's queue.
  auto queue = f.config.session_dir / "queue.jsonl";
  REQUIRE(wait_until([&] { return !read_file(queue).empty(); }));
  CHECK(read_jsonl(queue)[0]["status"] == "stopped");
}

TEST_CASE("an interrupt while an interactive session is idle keeps the session") {
  agent_fixture f;
  f.config.interactive = true;
  auto session = f.start({text_reply("hello"), text_reply("still here")}, {"hi"});
  REQUIRE(wait_until([&] { return f.transcript().size() == 2; }));
  CHECK(control(session, f.actors.sys(), control_command::interrupt) ==
        control_ok("cleared the queue: the session is idle"));
  caf::anon_send(session, submit_atom::value, make_input("again"));
  REQUIRE(wait_until([&] { return f.transcript().size() == 4; }));
  caf::anon_send(session, submit_atom::value, make_input("/exit"));
  CHECK(f.events->wait_for_end().reason == terminal_reason::completed);
}

TEST_CASE("a session waiting for notifications keeps the terminal states of a run") {
  SUBCASE("the step cap ends it max_turns") {
    agent_fixture f;
    f.config.wait_for_notifications = true;
    f.config.max_steps = 1;
    auto ended = f.run({shell_reply("true"), text_reply("never")});
    CHECK(ended.reason == terminal_reason::max_turns);
  }
  SUBCASE("an interrupt mid-step ends it interrupted") {
    agent_fixture f;
    f.config.wait_for_notifications = true;
    auto session = f.start({shell_reply("sleep 10")}, {"go"});
    REQUIRE(wait_until([&] { return f.transcript().size() == 2; }));
    caf::anon_send(session, interrupt_atom::value);
    CHECK(f.events->wait_for_end().reason == terminal_reason::interrupted);
  }
  SUBCASE("with nothing queued it waits, and a notification starts a turn") {
    agent_fixture f;
    f.config.wait_for_notifications = true;
    f.config.idle_timeout = std::chrono::milliseconds{300};
    auto session = f.start({text_reply("first"), text_reply("got the news")}, {"hi"});
    REQUIRE(wait_until([&] { return f.transcript().size() == 2; }));
    caf::anon_send(session, notify_atom::value, external("news"));
    auto ended = f.events->wait_for_end();
    CHECK(ended.reason == terminal_reason::completed);
    CHECK(ended.result_text == "got the news");
  }
}

TEST_CASE("notifications that arrive during a turn's last step all go in before the next call") {
  agent_fixture f;
  auto session = f.start({slow_text("final", 400), text_reply("saw both")}, {"go"});
  std::this_thread::sleep_for(std::chrono::milliseconds{100});
  caf::anon_send(session, notify_atom::value, external("first"));
  caf::anon_send(session, notify_atom::value, external("second"));
  auto ended = f.events->wait_for_end();
  CHECK(ended.state.turn_count == 2); // one turn for both, not one each
  CHECK(f.transcript_roles() == strings{"user:prompt", "assistant", "user:task-notification",
                                        "user:task-notification", "assistant"});
  auto log = f.transcript();
  CHECK(log[2]["id"] == "ntf_first");
  CHECK(log[3]["id"] == "ntf_second");
}

TEST_CASE("the idle timeout waits for background subagents that still work") {
  agent_fixture f;
  f.config.wait_for_notifications = true;
  f.config.idle_timeout = std::chrono::milliseconds{100};
  f.enable_subagents({{"child", {slow_text("child done", 600)}}});
  auto ended = f.run({background_task("scripted:child"), text_reply("launched"),
                      text_reply("the child reported")});
  CHECK(ended.reason == terminal_reason::completed);
  CHECK(ended.result_text == "the child reported");
  auto log = f.transcript();
  REQUIRE(log.size() == 6);
  CHECK(log[4]["meta"]["status"] == "completed");
}

TEST_CASE("a subagent left to finish ends backgrounded and leaves its result in the queue") {
  agent_fixture f;
  f.config.stop_children_on_end = false;
  f.child_events = std::make_shared<recording>();
  f.enable_subagents({{"child", {slow_text("child result", 300)}}});
  auto ended = f.run({background_task("scripted:child"),
                      tool_reply("complete", {{"summary", "parent done"}})});
  CHECK(ended.reason == terminal_reason::completed);
  auto child_end = f.child_events->wait_for_end();
  CHECK(child_end.reason == terminal_reason::backgrounded);
  CHECK(f.child_events->notices("detached").size() == 1);
  auto queue = f.config.session_dir / "queue.jsonl";
  REQUIRE(wait_until([&] { return !read_file(queue).empty(); }));
  auto entries = read_jsonl(queue);
  REQUIRE(entries.size() == 1);
  CHECK(entries[0]["status"] == "completed");
  CHECK(entries[0]["text"] == "child result");
}

TEST_CASE("agents left to finish run even when the owner ends before they were spawned") {
  // One reply launches many and completes: the owner ends while most launches still wait to
  // be spawned (a few per tick), and every one of them must still run to its end.
  agent_fixture f;
  f.config.stop_children_on_end = false;
  f.config.max_children = 100;
  f.enable_subagents({{"child", {text_reply("child result")}}});
  auto calls = json::array();
  for (int i = 0; i < 96; ++i) // fewer than the queue holds (100)
    calls.push_back({{"name", "task"},
                     {"input", {{"prompt", "work " + std::to_string(i)},
                                {"mode", "background"},
                                {"model", "scripted:child"}}}});
  calls.push_back({{"name", "complete"}, {"input", {{"summary", "launched them"}}}});
  auto ended = f.run({json{{"text", ""}, {"tool_calls", calls}}});
  CHECK(ended.reason == terminal_reason::completed);
  auto queue = f.config.session_dir / "queue.jsonl";
  REQUIRE(wait_until([&] { return read_jsonl(queue).size() == 96; },
                     std::chrono::seconds{60}));
  for (auto& entry : read_jsonl(queue)) {
    INFO(entry.dump());
    CHECK(entry["status"] == "completed");
    CHECK(entry["text"] == "child result");
  }
}

TEST_CASE("a background shell task still running when a headless run ends is reported") {
  agent_fixture f;
  auto ended = f.run({tool_reply("shell", {{"command", "echo started; sleep 30"},
                                           {"run_in_background", true}}),
                      text_reply("left it running")});
  CHECK(ended.reason == terminal_reason::completed);
  auto queue = f.config.session_dir / "queue.jsonl";
  REQUIRE(wait_until([&] { return !read_file(queue).empty(); }));
  auto entries = read_jsonl(queue);
  REQUIRE(entries.size() == 1);
  CHECK(entries[0]["source"] == "shell");
  CHECK(entries[0]["status"] == "stopped");
  CHECK(entries[0]["description"] == "echo started; sleep 30");
  CHECK(entries[0]["text"].get<std::string>().find("the session ended") != std::string::npos);
}

TEST_CASE("a notification still undelivered at the end is written back as it came") {
  agent_fixture f;
  // The notification arrives during the step whose complete call ends the session: no model
  // call follows to deliver it.
  auto session = f.start({json{{"text", ""},
                               {"tool_calls", json::array({{{"name", "shell"},
                                                            {"input", {{"command", "sleep 0.4"}}}},
                                                           {{"name", "complete"},
                                                            {"input", {{"summary", "done"}}}}})}}},
                         {"go"});
  REQUIRE(wait_until([&] { return f.transcript().size() == 2; }));
  caf::anon_send(session, notify_atom::value, external("late"));
  CHECK(f.events->wait_for_end().reason == terminal_reason::completed);
  // Written by the disk actor, which may still be at it when the terminal event is out.
  auto queue = f.config.session_dir / "queue.jsonl";
  REQUIRE(wait_until([&] { return !read_file(queue).empty(); }));
  auto entries = read_jsonl(queue);
  REQUIRE(entries.size() == 1);
  CHECK(entries[0]["id"] == "ntf_late");
  CHECK(entries[0]["text"] == "late"); // the message itself, not its rendered block
  CHECK(entries[0]["description"] == "about late");
}

namespace {

// A parent's model that launches a background agent, then resumes it by the id its launch
// answered with, while the agent still works on the first job.
model_client_actor spawn_resuming_parent(caf::actor_system& sys) {
  return sys.spawn([](model_client_actor::pointer) -> model_client_actor::behavior_type {
    auto calls = std::make_shared<int>(0);
    return {
      [calls](generate_atom, const model_request& request) {
        model_reply reply;
        reply.assistant.role = role::assistant;
        reply.stop_reason = "end_turn";
        auto n = ++*calls;
        if (n == 1) {
          reply.assistant.tool_calls = {{"c1", "task",
                                         {{"prompt", "first job"}, {"mode", "background"},
                                          {"model", "scripted:child"}},
                                         call_format::native}};
        } else if (n == 2) {
          const auto& started = request.context.messages.back()->content;
          auto at = started.find("agent_");
          auto id = started.substr(at, started.find(' ', at) - at);
          reply.assistant.tool_calls = {{"c2", "task",
                                         {{"prompt", "second job"}, {"resume", id}},
                                         call_format::native}};
        } else {
          reply.assistant.content = "reply " + std::to_string(n);
        }
        return reply;
      },
      [](cancel_atom) {},
      [](due_atom, uint64_t) {},
    };
  });
}

} // namespace

TEST_CASE("a subagent resumed while it works reports the answers of both jobs") {
  agent_fixture f;
  f.enable_subagents({{"child", {slow_text("first answer", 500), text_reply("second answer")}}});
  f.start_with(spawn_resuming_parent(f.actors.sys()), {"go"});
  auto ended = f.events->wait_for_end();
  CHECK(ended.reason == terminal_reason::completed);
  auto log = f.transcript();
  auto note = std::find_if(log.begin(), log.end(), [](const json& m) {
    return m.value("origin", "") == "task-notification";
  });
  REQUIRE(note != log.end());
  auto text = (*note)["content"].get<std::string>();
  CHECK(text.find("[the answer to an earlier prompt]\nfirst answer") != std::string::npos);
  CHECK(text.find("second answer") != std::string::npos);
  CHECK(text.find("first answer") < text.find("second answer"));
  // Spawned by then ("still running") or still queued to spawn ("which is starting": the
  // spawn is a timer message, so the resume usually comes first), the agent takes the prompt
  // as its next job.
  CHECK(log[4]["content"].get<std::string>().find("Sent the prompt to agent") == 0);
}
