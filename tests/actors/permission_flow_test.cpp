// can_use_tool in the loop: denials become results the model reads, an ask goes to the asker
// (or is a denial when there is none), a declined call hands control back.

#include <doctest/doctest.h>

#include <atomic>
#include <deque>
#include <mutex>

#include <caf/typed_event_based_actor.hpp>

#include "support/agent_fixture.hpp"

using namespace troupe;
using namespace troupe::test;
using nlohmann::json;
using strings = std::vector<std::string>;

namespace {

struct scripted_answers {
  std::mutex mutex;
  std::deque<permission_answer> answers;
  std::vector<std::string> asked; // the tool name and reason of each question
};

permission_asker_actor spawn_asker(caf::actor_system& sys, std::shared_ptr<scripted_answers> s) {
  return sys.spawn([s](permission_asker_actor::pointer) -> permission_asker_actor::behavior_type {
    return {[s](ask_atom, const tool_call& call, const std::string& reason) {
      std::lock_guard<std::mutex> lock{s->mutex};
      s->asked.push_back(call.name + ": " + reason);
      permission_verdict verdict;
      verdict.answer = s->answers.empty() ? permission_answer::no : s->answers.front();
      if (!s->answers.empty())
        s->answers.pop_front();
      return verdict;
    }};
  });
}

void use_policy(agent_fixture& f, permission_mode mode, std::vector<std::string> allow = {}) {
  permission_policy policy;
  policy.mode = mode;
  for (auto& text : allow)
    policy.rules.allow.push_back(*parse_permission_rule(text));
  policy.context.cwd = f.config.cwd;
  f.config.permissions = std::make_shared<const permission_policy>(policy);
}

} // namespace

TEST_CASE("headless, an ask is a denial the model reads, giving up ends permission_blocked") {
  agent_fixture f;
  use_policy(f, permission_mode::standard);
  auto ended = f.run({tool_reply("shell", {{"command", "rm -rf build"}}),
                      text_reply("I cannot continue without running that.")});
  CHECK(ended.reason == terminal_reason::permission_blocked);
  CHECK(exit_code_for(ended.reason) == 4);
  auto log = f.transcript();
  REQUIRE(log.size() == 4);
  CHECK(log[2]["is_error"] == true);
  auto denied = log[2]["content"].get<std::string>();
  CHECK(denied.rfind("Permission denied: shell needs approval", 0) == 0);
  CHECK(denied.find("--allow 'shell(rm *)'") != std::string::npos); // the program, not the line
  REQUIRE(ended.permission_denials.size() == 1);
  CHECK(ended.permission_denials[0].tool_name == "shell");
  CHECK(ended.permission_denials[0].tool_input["command"] == "rm -rf build");
  CHECK(ended.permission_denials[0].tool_call_id == log[1]["tool_calls"][0]["id"]);
}

TEST_CASE("a model that works around a denial completes normally") {
  agent_fixture f;
  use_policy(f, permission_mode::standard);
  auto ended = f.run({tool_reply("shell", {{"command", "cat notes.txt"}}),
                      tool_reply("read", {{"path", "notes.txt"}}), text_reply("read it instead")});
  CHECK(ended.reason == terminal_reason::completed);
  CHECK(ended.permission_denials.size() == 1);
}

TEST_CASE("plan mode refuses writes and runs reads of the same reply") {
  agent_fixture f;
  use_policy(f, permission_mode::plan);
  write_file(f.config.cwd / "a.txt", "hello\n");
  auto ended = f.run({json{{"text", ""},
                           {"tool_calls", json::array({{{"name", "read"}, {"input", {{"path", "a.txt"}}}},
                                                       {{"name", "write"},
                                                        {"input", {{"path", "b.txt"}, {"content", "x"}}}}})}},
                      text_reply("plan: write b.txt")});
  // Plan mode's refusal asks for a plan, and the model gave one: the run is done.
  CHECK(ended.reason == terminal_reason::completed);
  REQUIRE(ended.permission_denials.size() == 1);
  CHECK(ended.permission_denials[0].cause == denial_cause::plan_mode);
  auto log = f.transcript();
  CHECK(log[2]["content"] == "     1\thello\n");
  CHECK(log[3]["content"].get<std::string>().find("plan mode allows read-only tools only") !=
        std::string::npos);
  CHECK_FALSE(std::filesystem::exists(f.config.cwd / "b.txt"));
}

TEST_CASE("asked: yes runs the call, always stops asking for it, no hands control back") {
  agent_fixture f;
  use_policy(f, permission_mode::standard);
  auto answers = std::make_shared<scripted_answers>();
  answers->answers = {permission_answer::yes, permission_answer::always, permission_answer::no};
  f.config.asker = spawn_asker(f.actors.sys(), answers);
  auto ended = f.run({tool_reply("shell", {{"command", "echo one"}}),
                      tool_reply("shell", {{"command", "echo two"}}),
                      tool_reply("shell", {{"command", "echo two"}}), // allowed: always echo
                      json{{"text", ""},
                           {"tool_calls", json::array({{{"name", "shell"}, {"input", {{"command", "printf three"}}}},
                                                       {{"name", "read"}, {"input", {{"path", "x"}}}}})}},
                      text_reply("never reached")});
  // The question names the rule an "always" answer adds.
  CHECK(answers->asked ==
        strings{"shell: shell needs approval\n[a]lways adds for this session: shell(echo *)",
                "shell: shell needs approval\n[a]lways adds for this session: shell(echo *)",
                "shell: shell needs approval\n[a]lways adds for this session: shell(printf *)"});
  CHECK(ended.reason == terminal_reason::permission_blocked);
  CHECK(f.transcript_roles() == strings{"user:prompt", "assistant", "tool", "assistant", "tool",
                                        "assistant", "tool", "assistant", "tool", "tool",
                                        "system:declined"});
  auto log = f.transcript();
  CHECK(log[2]["content"] == "one\n");
  CHECK(log[4]["content"] == "two\n");
  CHECK(log[6]["content"] == "two\n");
  CHECK(log[8]["content"] == "The user declined to run this call.");
  CHECK(log[9]["content"].get<std::string>().find("not run") != std::string::npos);
  REQUIRE(ended.permission_denials.size() == 1);
  CHECK(ended.permission_denials[0].reason == "declined by the user");
}

TEST_CASE("interactive: a declined call ends the turn and the session waits for input") {
  agent_fixture f;
  f.config.interactive = true;
  use_policy(f, permission_mode::standard);
  auto answers = std::make_shared<scripted_answers>();
  f.config.asker = spawn_asker(f.actors.sys(), answers); // answers no
  auto session = f.start({tool_reply("write", {{"path", "x.txt"}, {"content", "x"}}),
                          text_reply("after the next prompt")},
                         {"write x"});
  REQUIRE(wait_until([&] { return f.transcript().size() == 4; }));
  CHECK(f.transcript_roles() == strings{"user:prompt", "assistant", "tool", "system:declined"});
  caf::anon_send(session, submit_atom::value, make_input("never mind, just answer"));
  REQUIRE(wait_until([&] { return f.transcript().size() == 6; }));
  CHECK(f.transcript().back()["content"] == "after the next prompt");
  caf::anon_send_exit(session, caf::exit_reason::user_shutdown);
}
