// The loop contract of DESIGN.md, line by line, against a real actor system.

#include <doctest/doctest.h>

#include <signal.h>

#include <set>
#include <thread>

#include "support/agent_fixture.hpp"

using namespace troupe;
using namespace troupe::test;
using nlohmann::json;
using strings = std::vector<std::string>;

TEST_CASE("the step loop stops when the last reply holds no runnable tool") {
  agent_fixture f;
  auto ended = f.run({shell_reply("echo hi"), text_reply("all done")});
  CHECK(ended.reason == terminal_reason::completed);
  CHECK(ended.state.turn_count == 1);
  CHECK(ended.state.total_steps == 2);
  CHECK(ended.state.transition == transition_reason::structural_stop);
  CHECK(ended.result_text == "all done");
  CHECK(f.transcript_roles() == strings{"user:prompt", "assistant", "tool", "assistant"});
  auto log = f.transcript();
  CHECK(log[2]["content"] == "hi\n");
  CHECK(log[2]["tool_call_id"] == log[1]["tool_calls"][0]["id"]);
  CHECK(log[2]["exit_code"] == 0);
}

TEST_CASE("blocks in other languages are not runnable and end the turn") {
  agent_fixture f;
  auto ended = f.run({text_reply("Here is code:\n```python\nprint(1)\n```\nand ```shell\nls")});
  CHECK(ended.reason == terminal_reason::completed);
  CHECK(ended.state.total_steps == 1);
  CHECK(f.transcript_roles() == strings{"user:prompt", "assistant"});
}

TEST_CASE("save blocks write files and their result goes back to the model") {
  agent_fixture f;
  auto ended = f.run({text_reply("```save notes/a.txt\nhello\n```"), text_reply("saved")});
  CHECK(ended.reason == terminal_reason::completed);
  CHECK(read_file(f.config.cwd / "notes/a.txt") == "hello\n");
  auto log = f.transcript();
  REQUIRE(log.size() == 4);
  CHECK(log[2]["tool_name"] == "write");
  CHECK(log[2]["is_error"] == false);
}

TEST_CASE("max steps appends a system message and ends the run as max_turns") {
  agent_fixture f;
  f.config.max_steps = 2;
  auto ended = f.run({shell_reply("echo 1"), shell_reply("echo 2"), shell_reply("echo 3")});
  CHECK(ended.reason == terminal_reason::max_turns);
  CHECK(ended.state.step_count == 2);
  CHECK(ended.state.transition == transition_reason::max_steps);
  CHECK(f.transcript_roles() ==
        strings{"user:prompt", "assistant", "tool", "assistant", "tool", "system:max_steps"});
  CHECK(f.transcript().back()["content"].get<std::string>().find("maximum of 2 steps") !=
        std::string::npos);
  CHECK(f.state()["transition_reason"] == "max_steps");
}

TEST_CASE("a final reply without tools at the step cap completes normally") {
  agent_fixture f;
  f.config.max_steps = 2;
  auto ended = f.run({shell_reply("echo 1"), text_reply("done")});
  CHECK(ended.reason == terminal_reason::completed);
}

TEST_CASE("hooks fire at their points in order, turn.pre once per turn") {
  agent_fixture f;
  auto order = std::make_shared<strings>();
  int continues = 0;
  for (auto point : {hook_point::session_start, hook_point::turn_pre, hook_point::step_pre,
                     hook_point::generation_post, hook_point::turn_post,
                     hook_point::loop_continue, hook_point::session_end})
    f.config.hooks.emplace_back(point, [order, &continues](const hook_context& ctx) {
      order->push_back(to_string(ctx.point));
      std::vector<message> out;
      if (ctx.point == hook_point::loop_continue && continues++ == 0)
        out.push_back(make_input("continue please", message_origin::hook));
      return out;
    });
  auto ended = f.run({shell_reply("true"), text_reply("first"), text_reply("second")});
  CHECK(ended.reason == terminal_reason::completed);
  CHECK(ended.state.turn_count == 2);
  CHECK(*order == strings{"session.start", "turn.pre", "step.pre", "generation.post", "step.pre",
                          "generation.post", "turn.post", "loop.continue", "turn.pre",
                          "step.pre", "generation.post", "turn.post", "loop.continue",
                          "session.end"});
  CHECK(f.transcript_roles() ==
        strings{"user:prompt", "assistant", "tool", "assistant", "user:hook", "assistant"});
}

TEST_CASE("session.start hooks add context before the first input") {
  agent_fixture f;
  f.config.hooks.emplace_back(hook_point::session_start, [](const hook_context&) {
    message m;
    m.role = role::system;
    m.content = "todo: nothing";
    return std::vector<message>{m};
  });
  f.run({text_reply("ok")});
  CHECK(f.transcript_roles() == strings{"system:hook", "user:prompt", "assistant"});
}

TEST_CASE("a throwing hook is reported and the loop goes on") {
  agent_fixture f;
  f.config.hooks.emplace_back(hook_point::step_pre, [](const hook_context&) -> std::vector<message> {
    throw std::runtime_error("boom");
  });
  auto ended = f.run({text_reply("ok")});
  CHECK(ended.reason == terminal_reason::completed);
  REQUIRE(f.events->notices("hook_error").size() == 1);
  CHECK(f.events->notices("hook_error")[0]["text"] == "step.pre hook failed: boom");
}

TEST_CASE("queued prompts run as turns in order, non-interactive ends when the queue is empty") {
  agent_fixture f;
  auto ended = f.run({text_reply("one"), text_reply("two"), text_reply("three")},
                     {"first", "second", "third"});
  CHECK(ended.reason == terminal_reason::completed);
  CHECK(ended.state.turn_count == 3);
  auto log = f.transcript();
  REQUIRE(log.size() == 6);
  CHECK(log[0]["content"] == "first");
  CHECK(log[2]["content"] == "second");
  CHECK(log[4]["content"] == "third");
  CHECK(log[5]["content"] == "three");
}

TEST_CASE("the prompt queue holds 100 inputs by default, the rest is dropped with a notice") {
  agent_fixture f; // the session's default configuration: no cap is set here
  f.config.hooks.emplace_back(hook_point::loop_continue, [fired = false](const hook_context&) mutable {
    std::vector<message> out;
    if (!fired)
      for (int i = 0; i < 105; ++i)
        out.push_back(make_input("extra " + std::to_string(i), message_origin::hook));
    fired = true;
    return out;
  });
  std::vector<json> lines(101, text_reply("ok"));
  auto ended = f.run(lines);
  CHECK(ended.reason == terminal_reason::completed);
  CHECK(ended.state.turn_count == 101);
  auto dropped = f.events->notices("queue_overflow");
  REQUIRE(dropped.size() == 5);
  CHECK(dropped[0]["text"].get<std::string>().find("extra 100") != std::string::npos);
}

TEST_CASE("slash commands run without reaching the model or starting a turn") {
  agent_fixture f;
  int turns = 0;
  f.config.hooks.emplace_back(hook_point::turn_pre, [&turns](const hook_context&) {
    ++turns;
    return std::vector<message>{};
  });
  auto ended = f.run({text_reply("hello back")}, {"/help", "/nonsense", "hello"});
  CHECK(ended.reason == terminal_reason::completed);
  CHECK(turns == 1);
  CHECK(f.transcript_roles() == strings{"user:prompt", "assistant"});
  CHECK(f.events->notices("command").size() == 1);
  CHECK(f.events->notices("unknown_command").size() == 1);
}

TEST_CASE("/exit ends the session before later inputs") {
  agent_fixture f;
  auto ended = f.run({text_reply("unused")}, {"/exit", "hello"});
  CHECK(ended.reason == terminal_reason::completed);
  CHECK(ended.state.turn_count == 0);
  CHECK(f.transcript().empty());
}

TEST_CASE("every tool result, failures included, is written back after its reply") {
  agent_fixture f;
  json calls = json::array({{{"name", "shell"}, {"input", {{"command", "echo oops >&2; exit 3"}}}},
                            {{"name", "read"}, {"input", {{"path", "missing.txt"}}}},
                            {{"name", "teleport"}, {"input", json::object()}},
                            {{"name", "shell"}, {"input", json::object()}}});
  auto ended = f.run({{{"text", "trying"}, {"tool_calls", calls}}, text_reply("noted")});
  CHECK(ended.reason == terminal_reason::completed);
  auto log = f.transcript();
  REQUIRE(log.size() == 7);
  CHECK(log[1]["role"] == "assistant");
  CHECK(log[1]["tool_calls"].size() == 4);
  for (int i = 0; i < 4; ++i) {
    CHECK(log[2 + i]["role"] == "tool");
    CHECK(log[2 + i]["is_error"] == true);
    CHECK(log[2 + i]["tool_call_id"] == log[1]["tool_calls"][i]["id"]);
  }
  CHECK(log[2]["exit_code"] == 3);
  CHECK(log[2]["content"].get<std::string>().find("oops") != std::string::npos);
  CHECK(log[3]["content"].get<std::string>().find("cannot read") != std::string::npos);
  CHECK(log[4]["content"].get<std::string>().find("unknown tool 'teleport'") != std::string::npos);
  CHECK(log[5]["content"].get<std::string>().find("needs the argument 'command'") !=
        std::string::npos);
}

TEST_CASE("the reply is on disk and seen by generation.post before its tool runs") {
  agent_fixture f;
  auto seen = std::make_shared<strings>();
  auto marker = f.config.cwd / "ran.txt";
  auto transcript = f.config.session_dir / "transcript.jsonl";
  f.config.hooks.emplace_back(hook_point::generation_post, [=](const hook_context&) {
    auto lines = read_jsonl(transcript);
    seen->push_back(lines.back()["role"].get<std::string>() + " " +
                    (std::filesystem::exists(marker) ? "ran" : "not-run"));
    return std::vector<message>{};
  });
  // save runs inline in the executor, within microseconds: only a step that waits for the
  // session's answer keeps it from racing the transcript write.
  f.run({text_reply("```save ran.txt\nx\n```"), text_reply("done")});
  CHECK(*seen == strings{"assistant not-run", "assistant ran"});
}

TEST_CASE("the loop state is written after each step") {
  agent_fixture f;
  auto states = std::make_shared<std::vector<json>>();
  auto path = f.config.session_dir / "state.json";
  f.config.hooks.emplace_back(hook_point::step_pre, [=](const hook_context&) {
    if (std::filesystem::exists(path))
      states->push_back(json::parse(read_file(path)));
    return std::vector<message>{};
  });
  f.run({shell_reply("true"), shell_reply("true"), text_reply("done")});
  // Written once at the start (never an empty file), then after each step.
  REQUIRE(states->size() == 3);
  CHECK((*states)[0]["step_count"] == 0);
  CHECK((*states)[1]["step_count"] == 1);
  CHECK((*states)[1]["transition_reason"] == "tool_round");
  CHECK((*states)[2]["step_count"] == 2);
  CHECK((*states)[2]["messages_count"] == 5);
  auto final_state = f.state();
  CHECK(final_state["step_count"] == 3);
  CHECK(final_state["transition_reason"] == "structural_stop");
  CHECK(final_state["turn_count"] == 1);
}

TEST_CASE("a model error ends the run as error with the provider's message") {
  agent_fixture f;
  auto ended = f.run({shell_reply("true"), {{"error", {{"status", 429}, {"message", "slow down"}}}}});
  CHECK(ended.reason == terminal_reason::error);
  CHECK(ended.error_message == "slow down");
  CHECK(ended.state.transition == transition_reason::model_error);
  CHECK(f.transcript_roles() == strings{"user:prompt", "assistant", "tool"});
}

TEST_CASE("a script that runs out ends the run with a clear error, not a hang") {
  agent_fixture f;
  auto ended = f.run({shell_reply("true")});
  CHECK(ended.reason == terminal_reason::error);
  CHECK(ended.error_message.find("no reply left") != std::string::npos);
}

TEST_CASE("an interrupt during generation ends the run as interrupted at once") {
  agent_fixture f;
  auto session = f.start({{{"text", "slow"}, {"delay_ms", 20000}}}, {"go"});
  std::this_thread::sleep_for(std::chrono::milliseconds{100});
  auto sent = std::chrono::steady_clock::now();
  caf::anon_send<caf::message_priority::high>(session, interrupt_atom::value);
  auto ended = f.events->wait_for_end(std::chrono::seconds{5});
  CHECK(std::chrono::steady_clock::now() - sent < std::chrono::seconds{2});
  CHECK(ended.reason == terminal_reason::interrupted);
  CHECK(f.transcript_roles() == strings{"user:prompt", "system:interrupt"});
}

TEST_CASE("an interrupt during a tool kills it and answers every call of the reply") {
  agent_fixture f;
  auto session = f.start({text_reply("```shell\nsleep 30\n```\n```shell\necho never\n```")},
                         {"go"});
  // Wait until the reply is logged, i.e. the first command is running.
  for (int i = 0; i < 200 && f.transcript().size() < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  std::this_thread::sleep_for(std::chrono::milliseconds{100});
  caf::anon_send<caf::message_priority::high>(session, interrupt_atom::value);
  auto ended = f.events->wait_for_end(std::chrono::seconds{5});
  CHECK(ended.reason == terminal_reason::interrupted);
  CHECK(f.transcript_roles() ==
        strings{"user:prompt", "assistant", "tool", "tool", "system:interrupt"});
  auto log = f.transcript();
  CHECK(log[2]["content"].get<std::string>().find("interrupted") != std::string::npos);
  CHECK(log[3]["content"].get<std::string>().find("not run") != std::string::npos);
}

TEST_CASE("a transcript ending with the user's message is answered without new input") {
  agent_fixture f;
  f.config.history.push_back(make_input("what is 2+2?"));
  auto ended = f.run({text_reply("4")}, {});
  CHECK(ended.reason == terminal_reason::completed);
  CHECK(ended.state.turn_count == 1);
  CHECK(ended.result_text == "4");
}

TEST_CASE("interactive sessions wait for input instead of ending") {
  agent_fixture f;
  f.config.interactive = true;
  auto session = f.start({text_reply("one"), text_reply("two")}, {"first"});
  for (int i = 0; i < 200 && f.transcript().size() < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  CHECK(f.transcript().size() == 2);
  caf::anon_send(session, submit_atom::value, make_input("second"));
  caf::anon_send(session, submit_atom::value, make_input("/exit"));
  auto ended = f.events->wait_for_end();
  CHECK(ended.reason == terminal_reason::completed);
  CHECK(ended.state.turn_count == 2);
}

TEST_CASE("a session that starts its shell early starts it with its first request, "
          "not while it waits for input") {
  using namespace std::chrono_literals;
  auto before = children_named("bash");
  agent_fixture f;
  f.config.interactive = true;
  f.tools.start_shell_early = true;
  auto session = f.start({text_reply("one")}, {});
  std::this_thread::sleep_for(300ms);
  CHECK(children_named("bash") == before); // no request yet: no shell
  caf::anon_send(session, submit_atom::value, make_input("first"));
  auto started = await_new_children_named("bash", before, 3s, 200ms);
  CHECK(started.size() == 1); // started ahead, once: the reply held no command
  for (int i = 0; i < 200 && f.transcript().size() < 2; ++i)
    std::this_thread::sleep_for(10ms);
  CHECK(f.transcript().size() == 2);
  caf::anon_send(session, submit_atom::value, make_input("/exit"));
  CHECK(f.events->wait_for_end().reason == terminal_reason::completed);
}

TEST_CASE("events start with session_started and end with session_ended") {
  agent_fixture f;
  f.run({shell_reply("echo hi"), text_reply("bye")});
  auto events = f.events->events();
  REQUIRE(events.size() >= 3);
  CHECK(events.front()["event"] == "session_started");
  CHECK(events.front()["tools"] == json::array({"shell", "read", "write", "edit", "patch", "glob", "grep", "ls", "task_output", "task_stop", "todo", "complete", "task", "task_wait"}));
  CHECK(events.back()["event"] == "session_ended");
  int messages = 0;
  for (auto& e : events)
    messages += e["event"] == "message";
  CHECK(messages == 4);
}

TEST_CASE("a queued input the run never reaches is reported, not silently dropped") {
  agent_fixture f;
  f.config.max_steps = 1;
  auto ended = f.run({shell_reply("true"), text_reply("unused")}, {"first", "second"});
  CHECK(ended.reason == terminal_reason::max_turns);
  auto dropped = f.events->notices("input_dropped");
  REQUIRE(dropped.size() == 1);
  CHECK(dropped[0]["text"].get<std::string>().find("second") != std::string::npos);
}

TEST_CASE("calls left unanswered by a crash get a result before the model is asked again") {
  agent_fixture f;
  message reply;
  reply.id = "msg_a";
  reply.role = role::assistant;
  reply.tool_calls = {{"call_1", "shell", {{"command", "true"}}, call_format::native},
                      {"call_2", "shell", {{"command", "sleep 100"}}, call_format::native}};
  f.config.history = {make_input("go"), reply,
                      make_tool_message(reply.tool_calls[0], tool_result{"", false, 0, false})};
  loop_state before;
  before.turn_count = 5;
  before.total_steps = 9;
  f.config.resumed_state = before;
  auto ended = f.run({text_reply("recovered")}, {});
  CHECK(ended.reason == terminal_reason::completed);
  CHECK(ended.result_text == "recovered");
  CHECK(ended.state.turn_count == 6);
  CHECK(ended.state.total_steps == 10);
  auto log = f.transcript(); // only what this run wrote
  REQUIRE(log.size() == 2);
  CHECK(log[0]["tool_call_id"] == "call_2");
  CHECK(log[0]["is_error"] == true);
  CHECK(log[1]["content"] == "recovered");
}

TEST_CASE("background jobs of the shell die with the session") {
  agent_fixture f;
  auto ended = f.run({shell_reply("sleep 60 & echo $! > bg.pid"), text_reply("done")});
  CHECK(ended.reason == terminal_reason::completed);
  CHECK(wait_until_gone(std::stoi(read_file(f.config.cwd / "bg.pid"))));
}

TEST_CASE("a session shut down from outside still ends with an event") {
  agent_fixture f;
  f.config.interactive = true;
  auto session = f.start({text_reply("one")}, {"first"});
  for (int i = 0; i < 200 && f.transcript().size() < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  caf::anon_send_exit(session, caf::exit_reason::user_shutdown);
  auto ended = f.events->wait_for_end(std::chrono::seconds{5});
  CHECK(ended.reason == terminal_reason::interrupted);
  CHECK(ended.error_message.find("shut down") != std::string::npos);
}

TEST_CASE("complete ends the run at once with its summary as the result") {
  agent_fixture f;
  auto ended = f.run({tool_reply("complete", {{"summary", "Fixed the bug; tests pass."}}),
                      text_reply("never requested")});
  CHECK(ended.reason == terminal_reason::completed);
  CHECK(ended.result_text == "Fixed the bug; tests pass.");
  CHECK(ended.state.transition == transition_reason::completed);
  CHECK(ended.state.total_steps == 1);
  CHECK(f.transcript_roles() == strings{"user:prompt", "assistant", "tool"});
}

TEST_CASE("a complete call without a summary is an error result and the loop goes on") {
  agent_fixture f;
  auto ended = f.run({tool_reply("complete", {{"summary", " "}}), text_reply("ok, summary: done")});
  CHECK(ended.state.total_steps == 2);
  CHECK(ended.result_text == "ok, summary: done");
  CHECK(f.transcript()[2]["is_error"] == true);
}

TEST_CASE("todo keeps the task list in the loop state and publishes it") {
  agent_fixture f;
  auto todos = json::array({{{"content", "read the code"}, {"status", "completed"}},
                            {{"content", "fix it"}, {"status", "in_progress"}}});
  auto ended = f.run({tool_reply("todo", {{"todos", todos}}),
                      tool_reply("todo", {{"todos", json::array({{{"content", "x"}, {"status", "bad"}}})}}),
                      text_reply("working")});
  CHECK(ended.state.todos == todos); // the invalid second list changed nothing
  auto published = f.events->notices("todos");
  REQUIRE(published.size() == 1);
  CHECK(published[0]["text"] == "Task list (1/2 done):\n[x] read the code\n[>] fix it\n");
  CHECK(read_json(f.config.session_dir / "state.json")["todos"] == todos);
}
