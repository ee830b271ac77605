// Task notifications and subagents as mailbox messages: every delivery rule (idle, busy,
// urgent, ended), their order against tool results, supervision and the caps.

#include <doctest/doctest.h>

#include <thread>

#include <caf/scoped_actor.hpp>

#include "store/notification_queue.hpp"
#include "support/agent_fixture.hpp"

using namespace troupe;
using namespace troupe::test;
using nlohmann::json;
using strings = std::vector<std::string>;

namespace {

task_notification external(const std::string& text, bool urgent = false) {
  task_notification n;
  n.id = "ntf_" + text;
  n.source = "external";
  n.text = text;
  n.urgent = urgent;
  return n;
}

json task_call(json input) {
  return {{"text", ""}, {"tool_calls", json::array({{{"name", "task"}, {"input", input}}})}};
}

json slow_text(const std::string& text, int delay_ms) {
  return {{"text", text}, {"delay_ms", delay_ms}};
}

bool has_role(agent_fixture& f, const std::string& role) {
  auto roles = f.transcript_roles();
  return std::find(roles.begin(), roles.end(), role) != roles.end();
}

} // namespace

TEST_CASE("an idle session starts a turn with a notification at once") {
  agent_fixture f;
  f.config.interactive = true;
  auto session = f.start({text_reply("hello"), text_reply("noted")}, {"hi"});
  REQUIRE(wait_until([&] { return f.transcript().size() == 2; }));
  caf::anon_send(session, notify_atom::value, external("the build finished"));
  REQUIRE(wait_until([&] { return f.transcript().size() == 4; }));
  caf::anon_send(session, submit_atom::value, make_input("/exit"));
  auto ended = f.events->wait_for_end();
  CHECK(ended.state.turn_count == 2);
  CHECK(f.transcript_roles() ==
        strings{"user:prompt", "assistant", "user:task-notification", "assistant"});
  auto note = f.transcript()[2];
  CHECK(note["id"] == "ntf_the build finished");
  CHECK(note["content"].get<std::string>().find("the build finished") != std::string::npos);
  CHECK(note["meta"]["received_at_us"].get<int64_t>() > 0);
}

TEST_CASE("a busy session takes a notification before its next model call, after the results") {
  agent_fixture f;
  auto session = f.start({shell_reply("sleep 0.4; echo slow"), text_reply("after")}, {"go"});
  REQUIRE(wait_until([&] { return f.transcript().size() == 2; })); // the call is running
  caf::anon_send(session, notify_atom::value, external("mid-step"));
  auto ended = f.events->wait_for_end();
  CHECK(ended.reason == terminal_reason::completed);
  CHECK(ended.state.turn_count == 1); // no turn of its own: it joined the running one
  CHECK(f.transcript_roles() ==
        strings{"user:prompt", "assistant", "tool", "user:task-notification", "assistant"});
}

TEST_CASE("a notification during the last step of a turn starts the next turn") {
  agent_fixture f;
  auto session = f.start({slow_text("final", 400), text_reply("saw it")}, {"go"});
  std::this_thread::sleep_for(std::chrono::milliseconds{100});
  caf::anon_send(session, notify_atom::value, external("late news"));
  auto ended = f.events->wait_for_end();
  CHECK(ended.reason == terminal_reason::completed);
  CHECK(ended.state.turn_count == 2);
  CHECK(ended.result_text == "saw it");
  CHECK(f.transcript_roles() ==
        strings{"user:prompt", "assistant", "user:task-notification", "assistant"});
}

TEST_CASE("an urgent notification interrupts the step and starts a turn, the run goes on") {
  for (bool mid_tool : {true, false}) {
    CAPTURE(mid_tool);
    agent_fixture f;
    auto session = f.start({mid_tool ? shell_reply("sleep 5") : slow_text("slow", 5000),
                            text_reply("handled")},
                           {"go"});
    if (mid_tool)
      REQUIRE(wait_until([&] { return f.transcript().size() == 2; }));
    else
      std::this_thread::sleep_for(std::chrono::milliseconds{100});
    auto sent = std::chrono::steady_clock::now();
    caf::anon_send(session, notify_atom::value, external("stop that", true));
    auto ended = f.events->wait_for_end();
    CHECK(std::chrono::steady_clock::now() - sent < std::chrono::seconds{2});
    CHECK(ended.reason == terminal_reason::completed);
    CHECK(ended.result_text == "handled");
    if (mid_tool)
      CHECK(f.transcript_roles() == strings{"user:prompt", "assistant", "tool", "system:interrupt",
                                            "user:task-notification", "assistant"});
    else
      CHECK(f.transcript_roles() == strings{"user:prompt", "system:interrupt",
                                            "user:task-notification", "assistant"});
  }
}

TEST_CASE("the same notification is delivered once, and an ended session refuses more") {
  agent_fixture f;
  f.config.interactive = true;
  auto session = f.start({text_reply("one"), text_reply("two")}, {"hi"});
  REQUIRE(wait_until([&] { return f.transcript().size() == 2; }));
  caf::anon_send(session, notify_atom::value, external("once"));
  caf::anon_send(session, notify_atom::value, external("once"));
  REQUIRE(wait_until([&] { return f.transcript().size() == 4; }));
  caf::anon_send(session, submit_atom::value, make_input("/exit"));
  f.events->wait_for_end();
  CHECK(f.transcript().size() == 4);
  caf::scoped_actor self{f.actors.sys()};
  bool delivered = true;
  self->request(session, std::chrono::seconds{2}, notify_atom::value, external("too late"))
    .receive([&](bool ok) { delivered = ok; }, [&](caf::error&) { delivered = false; });
  CHECK_FALSE(delivered);
}

TEST_CASE("a background shell task that ends on its own is a notification") {
  agent_fixture f;
  f.config.interactive = true;
  auto session = f.start({tool_reply("shell", {{"command", "sleep 0.2; echo built"},
                                               {"run_in_background", true}}),
                          text_reply("started it"), text_reply("it finished")},
                         {"build"});
  REQUIRE(wait_until([&] { return f.transcript().size() == 6; }));
  caf::anon_send(session, submit_atom::value, make_input("/exit"));
  f.events->wait_for_end();
  auto log = f.transcript();
  CHECK(log[4]["origin"] == "task-notification");
  CHECK(log[4]["meta"]["source"] == "shell");
  CHECK(log[4]["meta"]["status"] == "completed");
  CHECK(log[4]["content"].get<std::string>().find("built") != std::string::npos);
}

TEST_CASE("a foreground subagent's answer is the task call's result") {
  agent_fixture f;
  f.enable_subagents({{"child", {text_reply("the child found 42")}}});
  auto ended = f.run({task_call({{"prompt", "find the number"}, {"model", "scripted:child"}}),
                      text_reply("it is 42")});
  CHECK(ended.reason == terminal_reason::completed);
  auto log = f.transcript();
  REQUIRE(log.size() == 4);
  CHECK(log[2]["role"] == "tool");
  CHECK(log[2]["content"] == "the child found 42");
  CHECK(log[2]["is_error"] == false);
  // The child has a transcript of its own under the parent's session directory.
  auto agents = f.config.session_dir / "agents";
  REQUIRE(std::filesystem::exists(agents));
  auto child_dir = std::filesystem::directory_iterator(agents)->path();
  auto child_log = read_jsonl(child_dir / "transcript.jsonl");
  REQUIRE(child_log.size() == 2);
  CHECK(child_log[0]["content"] == "find the number");
  CHECK(child_log[0]["origin"] == "parent");
}

TEST_CASE("background subagents report through notifications, the parent waits for them") {
  agent_fixture f;
  f.enable_subagents({{"slow", {slow_text("slow result", 300)}},
                      {"fast", {slow_text("fast result", 50)}}});
  auto ended = f.run(
    {json{{"text", ""},
          {"tool_calls",
           json::array({{{"name", "task"},
                         {"input", {{"prompt", "a"}, {"mode", "background"}, {"model", "scripted:slow"}}}},
                        {{"name", "task"},
                         {"input", {{"prompt", "b"}, {"mode", "background"}, {"model", "scripted:fast"}}}}})}},
     text_reply("both launched"), text_reply("fast is in"), text_reply("slow is in")});
  CHECK(ended.reason == terminal_reason::completed);
  CHECK(ended.result_text == "slow is in");
  CHECK(f.transcript_roles() ==
        strings{"user:prompt", "assistant", "tool", "tool", "assistant", "user:task-notification",
                "assistant", "user:task-notification", "assistant"});
  auto log = f.transcript();
  CHECK(log[2]["content"].get<std::string>().find("Started agent agent_") == 0);
  CHECK(log[5]["content"].get<std::string>().find("fast result") != std::string::npos);
  CHECK(log[7]["content"].get<std::string>().find("slow result") != std::string::npos);
  CHECK(log[7]["meta"]["status"] == "completed");
  CHECK(f.events->notices("agent_started").size() == 2);
}

TEST_CASE("the depth and concurrency caps answer with clear errors") {
  SUBCASE("depth") {
    agent_fixture f;
    f.config.depth = 3;
    f.enable_subagents({{"child", {text_reply("never")}}});
    f.run({task_call({{"prompt", "p"}, {"model", "scripted:child"}}), text_reply("ok")});
    auto result = f.transcript()[2];
    CHECK(result["is_error"] == true);
    CHECK(result["content"].get<std::string>().find("limit is 3") != std::string::npos);
  }
  SUBCASE("unknown agent to resume") {
    agent_fixture f;
    f.enable_subagents({{"child", {text_reply("never")}}});
    f.run({task_call({{"prompt", "p"}, {"resume", "agent_nosuch"}}), text_reply("ok")});
    auto result = f.transcript()[2];
    CHECK(result["is_error"] == true);
    CHECK(result["content"].get<std::string>().find("no agent 'agent_nosuch'") !=
          std::string::npos);
  }
  SUBCASE("a path in place of an agent id to resume") {
    // The id comes from the model: it must never reach another session's transcript.
    agent_fixture f;
    auto victim = f.dir / "victim";
    write_file(victim / "transcript.jsonl",
               R"({"content":"victim","id":"msg_1","role":"user","timestamp_ms":1})" "\n");
    auto before = read_file(victim / "transcript.jsonl");
    f.enable_subagents({{"child", {text_reply("injected")}}});
    f.run({task_call({{"prompt", "p"}, {"resume", victim.string()}, {"model", "scripted:child"}}),
           task_call({{"prompt", "p"}, {"resume", "../../victim"}, {"model", "scripted:child"}}),
           text_reply("ok")});
    auto log = f.transcript();
    for (auto i : {2, 4}) {
      CHECK(log[i]["is_error"] == true);
      CHECK(log[i]["content"].get<std::string>().find("no agent '") != std::string::npos);
    }
    CHECK(read_file(victim / "transcript.jsonl") == before);
    CHECK(!std::filesystem::exists(victim / "session.json"));
  }
  SUBCASE("an empty prompt and a step cap below one") {
    agent_fixture f;
    f.enable_subagents({{"child", {text_reply("never")}}});
    f.run({task_call({{"prompt", " \n"}, {"model", "scripted:child"}}),
           task_call({{"prompt", ""}, {"model", "scripted:child"}}),
           task_call({{"prompt", "p"}, {"max_steps", 0}, {"model", "scripted:child"}}),
           text_reply("ok")});
    auto log = f.transcript();
    REQUIRE(log.size() == 8);
    CHECK(log[2]["content"].get<std::string>().find("needs a prompt") != std::string::npos);
    CHECK(log[4]["content"].get<std::string>().find("must not be empty") != std::string::npos);
    CHECK(log[6]["content"].get<std::string>().find("must be at least 1") != std::string::npos);
    CHECK(f.events->notices("agent_started").empty());
  }
  SUBCASE("concurrency") {
    agent_fixture f;
    f.config.max_children = 1;
    f.enable_subagents({{"child", {slow_text("done", 200)}}});
    auto launch = json{{"prompt", "p"}, {"mode", "background"}, {"model", "scripted:child"}};
    f.run({json{{"text", ""},
                {"tool_calls", json::array({{{"name", "task"}, {"input", launch}},
                                            {{"name", "task"}, {"input", launch}}})}},
           text_reply("one ran"), text_reply("done")});
    auto log = f.transcript();
    CHECK(log[2]["is_error"] == false);
    CHECK(log[3]["is_error"] == true);
    CHECK(log[3]["content"].get<std::string>().find("the limit of 1 running at once") !=
          std::string::npos);
  }
}

TEST_CASE("a parent that ends stops its background subagents, their end goes to its queue") {
  for (bool stop : {true, false}) {
    CAPTURE(stop);
    agent_fixture f;
    f.config.stop_children_on_end = stop;
    f.enable_subagents({{"child", {slow_text("child result", 300)}}});
    // complete ends the parent at once, whatever still runs.
    auto ended = f.run({task_call({{"prompt", "p"}, {"mode", "background"},
                                   {"model", "scripted:child"}}),
                        tool_reply("complete", {{"summary", "parent done"}})});
    CHECK(ended.reason == terminal_reason::completed);
    auto queue = f.config.session_dir / "queue.jsonl";
    REQUIRE(wait_until([&] { return std::filesystem::exists(queue) &&
                                    !read_file(queue).empty(); }));
    auto entries = read_jsonl(queue);
    REQUIRE(entries.size() == 1);
    CHECK(entries[0]["source"] == "agent");
    CHECK(entries[0]["status"] == (stop ? "stopped" : "completed"));
    if (!stop)
      CHECK(entries[0]["text"] == "child result");
  }
}

TEST_CASE("a subagent that dies without reporting is reported failed with the reason") {
  agent_fixture f;
  f.enable_subagents({{"child", {slow_text("never finished", 5000)}}});
  auto inner = f.config.spawn_subagent;
  f.config.spawn_subagent = [inner](caf::actor_system& sys, const subagent_launch& launch,
                                    agent_parent_actor parent) -> expected<session_actor> {
    auto child = inner(sys, launch, parent);
    if (child)
      std::thread{[actor = *child] {
        std::this_thread::sleep_for(std::chrono::milliseconds{100});
        caf::anon_send_exit(actor, caf::exit_reason::kill);
      }}.detach();
    return child;
  };
  auto ended = f.run({task_call({{"prompt", "p"}, {"mode", "background"},
                                 {"model", "scripted:child"}}),
                      text_reply("waiting"), text_reply("it failed")});
  CHECK(ended.reason == terminal_reason::completed);
  auto log = f.transcript();
  REQUIRE(log.size() == 6);
  CHECK(log[4]["meta"]["status"] == "failed");
  CHECK(log[4]["content"].get<std::string>().find("stopped unexpectedly") != std::string::npos);
}

TEST_CASE("a notification written to the durable queue is delivered on the next start, once") {
  agent_fixture f;
  task_notification n = external("while you were away");
  std::filesystem::create_directories(f.config.session_dir);
  REQUIRE(append_notification(f.config.session_dir / "queue.jsonl", n));
  auto ended = f.run({text_reply("read it"), text_reply("answered the prompt")}, {"hello"});
  CHECK(ended.reason == terminal_reason::completed);
  CHECK(f.transcript_roles() == strings{"user:task-notification", "assistant", "user:prompt",
                                        "assistant"});
  // The disk actor drops delivered entries on its own thread, a moment after they are logged.
  CHECK(wait_until([&] { return read_file(f.config.session_dir / "queue.jsonl").empty(); }));
  CHECK(has_role(f, "user:task-notification"));
}

TEST_CASE("a parent that is killed takes its subagents down, they leave word in its queue") {
  agent_fixture f;
  f.enable_subagents({{"child", {slow_text("never", 20000)}}});
  auto session = f.start({task_call({{"prompt", "p"}, {"mode", "background"},
                                     {"model", "scripted:child"}}),
                          text_reply("waiting")},
                         {"go"});
  REQUIRE(wait_until([&] { return f.transcript().size() == 4; })); // launched, now waiting
  caf::anon_send_exit(session, caf::exit_reason::kill);
  auto queue = f.config.session_dir / "queue.jsonl";
  REQUIRE(wait_until([&] { return std::filesystem::exists(queue) && !read_file(queue).empty(); }));
  auto entries = read_jsonl(queue);
  REQUIRE(entries.size() == 1);
  CHECK(entries[0]["status"] == "stopped");
  // In plain words, never CAF's exit_reason(kill).
  CHECK(entries[0]["text"].get<std::string>().find("the parent session stopped: it was killed") !=
        std::string::npos);
  CHECK(entries[0]["text"].get<std::string>().find("exit_reason") == std::string::npos);
}

TEST_CASE("resume sends a new prompt to a subagent that ended, with its transcript") {
  agent_fixture f;
  f.enable_subagents({{"child", {text_reply("first answer"), text_reply("second answer")}}});
  // The second launch is a new session on the same transcript: its script starts over.
  auto ended = f.run({task_call({{"prompt", "first"}, {"model", "scripted:child"}}),
                      text_reply("placeholder")});
  REQUIRE(ended.reason == terminal_reason::completed);
  auto agents = f.config.session_dir / "agents";
  auto agent_id = std::filesystem::directory_iterator(agents)->path().filename().string();

  agent_fixture again;
  again.config.session_dir = f.config.session_dir;
  again.enable_subagents({{"child", {text_reply("resumed answer")}}});
  again.run({task_call({{"prompt", "second"}, {"resume", agent_id}, {"model", "scripted:child"}}),
             text_reply("done")},
            {"continue"});
  auto child_log = read_jsonl(agents / agent_id / "transcript.jsonl");
  REQUIRE(child_log.size() == 4); // the first exchange, then the resumed one
  CHECK(child_log[2]["content"] == "second");
  CHECK(child_log[3]["content"] == "resumed answer");
}

TEST_CASE("an agent that cannot start is never announced as started, and says why") {
  agent_fixture f;
  f.enable_subagents({{"child", {text_reply("done")}}});
  f.config.spawn_subagent = [](caf::actor_system&, const subagent_launch&,
                               agent_parent_actor) -> expected<session_actor> {
    return failure{"no such model"};
  };
  f.run({task_call({{"prompt", "p"}, {"model", "scripted:child"}}), text_reply("ok")});
  auto log = f.transcript();
  REQUIRE(log.size() >= 3);
  CHECK(log[2]["content"].get<std::string>().find("could not start: no such model") !=
        std::string::npos);
  CHECK(f.events->notices("agent_started").empty());
}
