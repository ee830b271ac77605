// The agent supervisor through a real parent session: launches that answer before the agents
// are spawned, task_wait, task_output and task_stop on agent ids, news gathered into one turn,
// the notification budget, and the agents a parent's end leaves behind.

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include <caf/scoped_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/agent_supervisor.hpp"
#include "actors/disk_io.hpp"
#include "store/ids.hpp"
#include "support/agent_fixture.hpp"

using namespace troupe;
using namespace troupe::test;
using nlohmann::json;

namespace {

json slow_text(const std::string& text, int delay_ms) {
  return {{"text", text}, {"delay_ms", delay_ms}};
}

json background(const std::string& prompt, const std::string& model) {
  return {{"name", "task"},
          {"input", {{"prompt", prompt}, {"mode", "background"}, {"model", model}}}};
}

// One reply launching `n` background agents of the same script.
json launches(int n, const std::string& model) {
  auto calls = json::array();
  for (int i = 0; i < n; ++i)
    calls.push_back(background("job " + std::to_string(i), model));
  return {{"text", ""}, {"tool_calls", calls}};
}

std::vector<std::string> started_ids(const std::vector<json>& log) {
  std::vector<std::string> ids;
  for (auto& m : log)
    if (m["role"] == "tool") {
      auto text = m["content"].get<std::string>();
      if (text.rfind("Started agent ", 0) == 0)
        ids.push_back(text.substr(14, text.find(' ', 14) - 14));
    }
  return ids;
}

size_t count_origin(const std::vector<json>& log, const std::string& origin) {
  return static_cast<size_t>(std::count_if(log.begin(), log.end(), [&](const json& m) {
    return m.value("origin", "") == origin;
  }));
}

} // namespace

TEST_CASE("background launches are answered before the agents are spawned") {
  agent_fixture f;
  f.enable_subagents({{"child", {text_reply("done")}}});
  // Each spawn takes 100 ms: launched in the step, ten would hold it a second.
  auto inner = f.config.spawn_subagent;
  auto spawned_at = std::make_shared<std::vector<int64_t>>();
  auto lock = std::make_shared<std::mutex>();
  f.config.spawn_subagent = [=](caf::actor_system& sys, const subagent_launch& launch,
                                agent_parent_actor parent) -> expected<session_actor> {
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
    {
      std::lock_guard<std::mutex> guard{*lock};
      spawned_at->push_back(now_ms());
    }
    return inner(sys, launch, parent);
  };
  f.config.max_children = 10;
  std::vector<json> script{launches(10, "scripted:child"), text_reply("all launched")};
  for (int i = 0; i < 10; ++i)
    script.push_back(text_reply("noted"));
  auto ended = f.run(script);
  CHECK(ended.reason == terminal_reason::completed);
  auto log = f.transcript();
  CHECK(started_ids(log).size() == 10);
  auto reply = std::find_if(log.begin(), log.end(),
                            [](const json& m) { return m.value("content", "") == "all launched"; });
  REQUIRE(reply != log.end());
  std::lock_guard<std::mutex> guard{*lock};
  REQUIRE(spawned_at->size() == 10);
  // The step went on to its next model call while the supervisor still spawned.
  CHECK((*reply)["timestamp_ms"].get<int64_t>() < spawned_at->back());
  CHECK(count_origin(log, "task-notification") == 10);
}

TEST_CASE("ids of agents launched together never collide") {
  agent_fixture f;
  f.enable_subagents({{"child", {text_reply("done")}}});
  f.config.max_children = 200;
  std::vector<json> script{launches(200, "scripted:child"), text_reply("launched")};
  for (int i = 0; i < 200; ++i)
    script.push_back(text_reply("noted"));
  f.run(script);
  auto ids = started_ids(f.transcript());
  REQUIRE(ids.size() == 200);
  std::sort(ids.begin(), ids.end());
  CHECK(std::unique(ids.begin(), ids.end()) == ids.end());
}

TEST_CASE("task_wait waits for every agent and returns their results: no notification follows") {
  agent_fixture f;
  f.enable_subagents({{"slow", {slow_text("slow result", 800)}},
                      {"fast", {slow_text("fast result", 250)}}});
  auto ended = f.run({json{{"text", ""},
                           {"tool_calls", json::array({background("a", "scripted:slow"),
                                                       background("b", "scripted:fast")})}},
                      tool_reply("task_wait", json::object()), text_reply("both in")});
  CHECK(ended.reason == terminal_reason::completed);
  CHECK(ended.result_text == "both in");
  auto log = f.transcript();
  CHECK(count_origin(log, "task-notification") == 0);
  auto waited = log[log.size() - 2];
  REQUIRE(waited["role"] == "tool");
  auto text = waited["content"].get<std::string>();
  CHECK(text.find("slow result") != std::string::npos);
  CHECK(text.find("fast result") != std::string::npos);
  CHECK(text.find("2 of 2 agent(s) ended") != std::string::npos);
}

TEST_CASE("task_wait any returns at the first end, and the others still notify") {
  agent_fixture f;
  f.enable_subagents({{"slow", {slow_text("slow result", 1500)}},
                      {"fast", {slow_text("fast result", 250)}}});
  auto ended = f.run({json{{"text", ""},
                           {"tool_calls", json::array({background("a", "scripted:slow"),
                                                       background("b", "scripted:fast")})}},
                      tool_reply("task_wait", {{"mode", "any"}}), text_reply("one in"),
                      text_reply("the other in")});
  CHECK(ended.reason == terminal_reason::completed);
  auto log = f.transcript();
  auto wait = std::find_if(log.begin(), log.end(), [](const json& m) {
    return m["role"] == "tool" && m["content"].get<std::string>().find("1 of 2") != std::string::npos;
  });
  REQUIRE(wait != log.end());
  CHECK((*wait)["content"].get<std::string>().find("fast result") != std::string::npos);
  CHECK((*wait)["content"].get<std::string>().find(": running") != std::string::npos);
  REQUIRE(count_origin(log, "task-notification") == 1);
  for (auto& m : log)
    if (m.value("origin", "") == "task-notification")
      CHECK(m["content"].get<std::string>().find("slow result") != std::string::npos);
}

TEST_CASE("task_wait stops waiting at its timeout and says which agents still run") {
  agent_fixture f;
  f.enable_subagents({{"slow", {slow_text("late", 1500)}}});
  auto ended = f.run({json{{"text", ""},
                             {"tool_calls", json::array({background("a", "scripted:slow")})}},
                      tool_reply("task_wait", {{"timeout", 0.2}}), text_reply("moving on"),
                      text_reply("late one noted")});
  CHECK(ended.reason == terminal_reason::completed);
  auto log = f.transcript();
  bool found = false;
  for (auto& m : log)
    if (m["role"] == "tool" &&
        m["content"].get<std::string>().find("stopped waiting after") != std::string::npos) {
      found = true;
      CHECK(m["content"].get<std::string>().find(": running") != std::string::npos);
      CHECK(m["content"].get<std::string>().find("0 of 1") != std::string::npos);
    }
  CHECK(found);
  CHECK(count_origin(log, "task-notification") == 1); // its end still comes
}

TEST_CASE("past the notification budget, results that arrive together are a line each") {
  agent_fixture f;
  f.enable_subagents({{"child", {slow_text(std::string(300, 'r'), 100)}}});
  f.config.notification_budget = 500;
  f.config.news_window = std::chrono::milliseconds{300}; // the three ends are one turn
  std::vector<json> script{launches(3, "scripted:child"), text_reply("launched")};
  for (int i = 0; i < 3; ++i)
    script.push_back(text_reply("noted"));
  auto ended = f.run(script);
  CHECK(ended.reason == terminal_reason::completed);
  size_t whole = 0;
  size_t lines = 0;
  for (auto& m : f.transcript()) {
    if (m.value("origin", "") != "task-notification")
      continue;
    auto text = m["content"].get<std::string>();
    if (m["meta"].value("summarized", false)) {
      ++lines;
      CHECK(text.find("read it with task_output agent_") != std::string::npos);
      CHECK(text.find(std::string(300, 'r')) == std::string::npos);
    } else {
      ++whole;
      CHECK(text.find(std::string(300, 'r')) != std::string::npos);
    }
  }
  CHECK(whole >= 1);
  CHECK(whole + lines == 3);
  CHECK(lines >= 1);
}

TEST_CASE("news that follows news closely is one turn, not one turn each") {
  agent_fixture f;
  f.enable_subagents({{"child", {slow_text("done", 200)}}});
  f.config.news_window = std::chrono::milliseconds{300};
  std::vector<json> script{launches(5, "scripted:child"), text_reply("launched")};
  for (int i = 0; i < 5; ++i)
    script.push_back(text_reply("noted"));
  auto ended = f.run(script);
  CHECK(ended.reason == terminal_reason::completed);
  auto log = f.transcript();
  CHECK(count_origin(log, "task-notification") == 5);
  // The first news starts a turn at once; what follows within the window waits for the rest.
  size_t news_turns = 0;
  for (auto& m : log)
    if (m.value("origin", "") == "task-notification" && m["meta"].value("turn_start", false))
      ++news_turns;
  CHECK(news_turns <= 2);
}

namespace {

tool_call call_of(const std::string& name, json input) {
  tool_call c;
  c.id = "call_1";
  c.name = name;
  c.input = std::move(input);
  return c;
}


// An owner that keeps every end it is told of.
struct recorded_ends {
  std::mutex lock;
  std::vector<agent_ended> ends;
  size_t unanswered(const std::string& id) {
    std::lock_guard<std::mutex> guard{lock};
    return static_cast<size_t>(std::count_if(ends.begin(), ends.end(), [&](const agent_ended& e) {
      return e.notification.task_id == id && !e.answered;
    }));
  }
};

agent_owner_actor::behavior_type recording_owner(std::shared_ptr<recorded_ends> out) {
  return {
    [out](agent_ended& e) {
      std::lock_guard<std::mutex> guard{out->lock};
      out->ends.push_back(e);
      return true;
    },
    [](agent_counts) {},
    [](notice_event&) {},
  };
}

struct supervisor_fixture {
  agent_fixture f;
  std::shared_ptr<recorded_ends> ends = std::make_shared<recorded_ends>();
  agent_supervisor_actor supervisor;
  std::unique_ptr<caf::scoped_actor> self;

  supervisor_fixture() {
    f.enable_subagents({{"quick", {text_reply("quick answer")}},
                        {"medium", {slow_text("medium answer", 300)}},
                        {"slow", {slow_text("slow answer", 5000)}}});
    agent_supervisor_config config;
    config.owner_id = "owner";
    config.owner_dir = f.config.paths();
    config.registry = f.config.registry;
    config.spawn_subagent = f.config.spawn_subagent;
    auto& sys = f.actors.sys();
    config.disk = spawn_disk_io(sys); // ends the owner can no longer take go to its queue
    supervisor = spawn_agent_supervisor(sys, config, sys.spawn(recording_owner, ends));
    self = std::make_unique<caf::scoped_actor>(sys);
  }
  ~supervisor_fixture() { caf::anon_send_exit(supervisor, caf::exit_reason::user_shutdown); }

  tool_result run(const tool_call& call) {
    tool_result out;
    (*self)
      ->request(supervisor, std::chrono::seconds{10}, execute_atom::value, call)
      .receive([&](tool_result& r) { out = std::move(r); },
               [&](caf::error& err) { FAIL(f.actors.sys().render(err)); });
    return out;
  }

  std::string launch(const std::string& model) {
    auto r = run(call_of("task", {{"prompt", model}, {"mode", "background"},
                                  {"model", "scripted:" + model}}));
    REQUIRE(r.output.rfind("Started agent agent_", 0) == 0);
    return r.output.substr(14, r.output.find(' ', 14) - 14);
  }

  std::string state_of(const std::string& id) {
    std::string state;
    (*self)
      ->request(supervisor, std::chrono::seconds{5}, list_atom::value)
      .receive(
        [&](agent_list& list) {
          for (auto& a : list.agents)
            if (a.id == id)
              state = a.state;
        },
        [&](caf::error&) {});
    return state;
  }
};

} // namespace

TEST_CASE("launches still queued when the owner ends are spawned then and left to finish") {
  supervisor_fixture s;
  auto& self = *s.self;
  // The launches and the end from one sender, in order: the end is taken before the first
  // batch of spawns (a timer message) comes round.
  for (int i = 0; i < 20; ++i)
    self->send(s.supervisor, execute_atom::value,
               call_of("task", {{"prompt", "quick " + std::to_string(i)},
                                {"mode", "background"},
                                {"model", "scripted:quick"}}));
  agent_list left;
  self->request(s.supervisor, std::chrono::seconds{10}, finish_atom::value, agents_at_end::finish)
    .receive([&](agent_list& l) { left = std::move(l); },
             [&](caf::error& err) { FAIL(s.f.actors.sys().render(err)); });
  CHECK(left.agents.size() == 20);
  for (auto& a : left.agents)
    CHECK(a.state == "running");
  auto queue = s.f.config.paths().queue();
  REQUIRE(wait_until([&] { return read_jsonl(queue).size() == 20; }, std::chrono::seconds{30}));
  for (auto& entry : read_jsonl(queue)) {
    INFO(entry.dump());
    CHECK(entry["status"] == "completed");
    CHECK(entry["text"] == "quick answer");
  }
}

TEST_CASE("a launch that cannot start when its owner ends is told in the owner's queue") {
  // A foreground call waits for its agent; the owner ends before the agent is spawned, and
  // its spawn then fails. The spawn comes through CAF's clock thread, so now and then it
  // overtakes the owner's end (the call is then answered with the failure itself): tried
  // again until the owner's end comes first.
  for (int attempt = 0; attempt < 20; ++attempt) {
    supervisor_fixture s;
    auto& self = *s.self;
    std::filesystem::create_directories(s.f.config.session_dir); // the owner's, as a run has it
    auto call = self->request(s.supervisor, std::chrono::seconds{10}, execute_atom::value,
                              call_of("task", {{"prompt", "x"}, {"mode", "foreground"},
                                               {"model", "scripted:nosuch"}}));
    self->request(s.supervisor, std::chrono::seconds{10}, finish_atom::value, agents_at_end::finish)
      .receive([](agent_list&) {}, [&](caf::error& err) { FAIL(s.f.actors.sys().render(err)); });
    tool_result answer;
    std::move(call).receive([&](tool_result& r) { answer = std::move(r); },
                            [&](caf::error& err) { FAIL(s.f.actors.sys().render(err)); });
    if (answer.output != "[the parent session ended]") {
      CHECK(answer.output.find("the agent could not start") != std::string::npos);
      continue;
    }
    auto queue = s.f.config.paths().queue();
    REQUIRE(wait_until([&] { return read_jsonl(queue).size() == 1; }));
    auto entry = read_jsonl(queue).front();
    CHECK(entry["status"] == "failed");
    CHECK(entry["text"].get<std::string>().find("the agent could not start") != std::string::npos);
    return;
  }
  FAIL("the spawn overtook the owner's end in every one of 20 tries");
}

TEST_CASE("agent tools with input of the wrong types are error results, never a crash") {
  supervisor_fixture s;
  auto id = s.launch("quick");
  for (auto& bad : {call_of("task_wait", {{"agent_ids", json::array({1})}}),
                    call_of("task_wait", {{"agent_ids", json::array({nullptr})}}),
                    call_of("task_output", {{"task_id", id}, {"block", "yes"}}),
                    call_of("task_output", {{"task_id", id}, {"timeout", "abc"}}),
                    call_of("task_stop", {{"task_id", 7}}),
                    call_of("task", {{"prompt", "p"}, {"tools", json::array({1, 2})}}),
                    call_of("task", {{"prompt", "p"}, {"resume", ""}})}) {
    CAPTURE(bad.input.dump());
    auto r = s.run(bad);
    CHECK(r.is_error);
  }
  // Still there, and still answering.
  CHECK(!s.state_of(id).empty());
}

TEST_CASE("an interrupted task_wait gives back the results it took as notifications, once") {
  supervisor_fixture s;
  // Still running when the wait starts (a quick one could end before it).
  auto quick = s.launch("medium");
  auto slow = s.launch("slow");
  std::optional<tool_result> answer;
  auto waiting = (*s.self)->request(s.supervisor, std::chrono::seconds{10}, execute_atom::value,
                                    call_of("task_wait", json::object()));
  // The quick one ends while the wait waits for the slow one: its result is the wait's.
  REQUIRE(wait_until([&] { return s.state_of(quick) == "completed"; }));
  CHECK(s.ends->unanswered(quick) == 0);
  caf::anon_send(s.supervisor, interrupt_atom::value);
  waiting.receive([&](tool_result& r) { answer = std::move(r); },
                  [&](caf::error& err) { FAIL(s.f.actors.sys().render(err)); });
  REQUIRE(answer);
  CHECK(answer->exit_code == 130);
  CHECK(answer->output.find("medium answer") == std::string::npos); // not twice
  CHECK(answer->output.find("its result follows in a <task-notification>") != std::string::npos);
  REQUIRE(wait_until([&] { return s.ends->unanswered(quick) == 1; }));
  (void)slow;
}

TEST_CASE("task_stop twice, and what task_wait says of an agent it stopped") {
  supervisor_fixture s;
  auto slow = s.launch("slow");
  REQUIRE(wait_until([&] { return s.state_of(slow) == "running"; }));
  CHECK(s.run(call_of("task_stop", {{"task_id", slow}})).output ==
        "Stopped agent " + slow + "; no notification follows.");
  CHECK(s.run(call_of("task_stop", {{"task_id", slow}})).output ==
        "Agent " + slow + " is already stopping.");
  REQUIRE(wait_until([&] { return s.state_of(slow) == "stopped"; }));
  auto waited = s.run(call_of("task_wait", {{"agent_ids", json::array({slow})}}));
  CHECK(waited.output.find("stopped with task_stop: no result") != std::string::npos);
  CHECK(waited.output.find("task-notification") == std::string::npos);
  CHECK(s.ends->unanswered(slow) == 0);
}

TEST_CASE("task_output reads an agent's whole result, task_stop stops one: through its messages") {
  supervisor_fixture s;
  auto id = s.launch("quick");
  auto output = s.run(call_of("task_output", {{"task_id", id}}));
  CHECK(output.output.find("quick answer") != std::string::npos);
  CHECK(output.output.find(id + " (quick): completed") == 0);
  auto again = s.run(call_of("task_stop", {{"task_id", id}}));
  CHECK(again.is_error);
  CHECK(again.output.find("has already ended (completed)") != std::string::npos);
  auto slow = s.launch("slow");
  auto early = s.run(call_of("task_output", {{"task_id", slow}, {"block", false}}));
  CHECK(early.output.find(": running") != std::string::npos);
  CHECK(s.run(call_of("task_stop", {{"task_id", slow}})).output ==
        "Stopped agent " + slow + "; no notification follows.");
  auto unknown = s.run(call_of("task_output", {{"task_id", "agent_000000"}}));
  CHECK(unknown.is_error);
  CHECK(unknown.output.find("no agent 'agent_000000'") != std::string::npos);
  // The stopped agent ends `stopped`, as its list entry says.
  CHECK(wait_until([&] { return s.state_of(slow) == "stopped"; }));
}

TEST_CASE("an agent's description is one line, and a prompt cut for it is cut at a character") {
  agent_fixture f;
  f.enable_subagents({{"child", {text_reply("done")}}});
  auto two_lines = background("job", "scripted:child");
  two_lines["input"]["description"] = "first\nsecond\tthird";
  std::string accented = "a";
  for (int i = 0; i < 70; ++i)
    accented += "\xc3\xa9"; // é: byte 60 falls inside one
  auto from_prompt = background(accented, "scripted:child");
  f.run({json{{"text", ""}, {"tool_calls", json::array({two_lines, from_prompt})}},
         text_reply("launched"), text_reply("noted"), text_reply("noted")});
  std::vector<std::string> descriptions;
  for (auto& m : f.transcript())
    if (m.value("origin", "") == "task-notification") {
      auto text = m["content"].get<std::string>();
      auto from = text.find("<description>");
      REQUIRE(from != std::string::npos);
      from += std::string{"<description>"}.size();
      descriptions.push_back(text.substr(from, text.find("</description>") - from));
    }
  REQUIRE(descriptions.size() == 2);
  std::sort(descriptions.begin(), descriptions.end());
  CHECK(descriptions[0] == accented.substr(0, 59)); // "a" and 29 whole characters
  CHECK(descriptions[1] == "first second third");
}
