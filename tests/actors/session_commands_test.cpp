// Slash commands and the session's record: /undo and /clear change what the model is sent (and
// a resumed session replays them), /model switches the model between turns, /rename and the
// namer name the session without holding up the loop, session.json follows the session.

#include <doctest/doctest.h>

#include <future>
#include <mutex>
#include <thread>

#include <caf/typed_event_based_actor.hpp>

#include "actors/namer.hpp"
#include "support/agent_fixture.hpp"

using namespace troupe;
using namespace troupe::test;
using nlohmann::json;
using strings = std::vector<std::string>;

namespace {

/// What a recording model was asked: the contents of every request's messages, in order.
struct asked {
  std::mutex mutex;
  std::vector<strings> requests;

  strings last() {
    std::lock_guard<std::mutex> guard{mutex};
    return requests.empty() ? strings{} : requests.back();
  }
  size_t count() {
    std::lock_guard<std::mutex> guard{mutex};
    return requests.size();
  }
};

/// A model that answers every request with "<tag> N" and records what it was sent.
model_client_actor spawn_recording_model(caf::actor_system& sys, std::shared_ptr<asked> into,
                                         std::string tag) {
  return sys.spawn([into, tag](model_client_actor::pointer) -> model_client_actor::behavior_type {
    return {
      [into, tag](generate_atom, const model_request& request) {
        strings contents;
        for (auto& m : request.context.messages)
          contents.push_back(m->content);
        size_t n = 0;
        {
          std::lock_guard<std::mutex> guard{into->mutex};
          into->requests.push_back(contents);
          n = into->requests.size();
        }
        model_reply reply;
        reply.assistant.role = role::assistant;
        reply.assistant.content = tag + " " + std::to_string(n);
        reply.stop_reason = "end_turn";
        return reply;
      },
      [](cancel_atom) {},
      [](due_atom, uint64_t) {},
    };
  });
}

bool has(const strings& contents, const std::string& text) {
  return std::find(contents.begin(), contents.end(), text) != contents.end();
}

} // namespace

TEST_CASE("/undo takes the last turn out of what the model is sent, and a resume keeps it out") {
  agent_fixture f;
  f.config.interactive = true;
  auto model_asked = std::make_shared<asked>();
  auto session = f.start_with(spawn_recording_model(f.actors.sys(), model_asked, "reply"),
                              {"first", "second", "/undo", "third"});
  REQUIRE(wait_until([&] { return model_asked->count() == 3; }));
  auto third = model_asked->last();
  CHECK(has(third, "first"));
  CHECK(has(third, "reply 1"));
  CHECK_FALSE(has(third, "second"));
  CHECK_FALSE(has(third, "reply 2"));
  CHECK(has(third, "third"));
  caf::anon_send(session, submit_atom::value, make_input("/exit"));
  f.events->wait_for_end();
  // The transcript keeps everything, with the marker saying what left the context.
  CHECK(f.transcript_roles() == strings{"user:prompt", "assistant", "user:prompt", "assistant",
                                        "system:undo", "user:prompt", "assistant"});
  auto marker = f.transcript()[4];
  CHECK(marker["meta"]["from"] == f.transcript()[2]["id"]);
  CHECK(marker["meta"]["removed"] == 2);

  // A resumed session replays the transcript, the undo included.
  agent_fixture again;
  again.config.session_dir = f.config.session_dir;
  auto loaded = load_transcript(f.config.session_dir / "transcript.jsonl");
  REQUIRE(loaded);
  again.config.history = loaded->messages;
  auto resumed_asked = std::make_shared<asked>();
  again.start_with(spawn_recording_model(again.actors.sys(), resumed_asked, "later"), {"fourth"});
  again.events->wait_for_end();
  auto fourth = resumed_asked->last();
  CHECK(has(fourth, "first"));
  CHECK(has(fourth, "third"));
  CHECK_FALSE(has(fourth, "second"));
  CHECK(has(fourth, "fourth"));
}

TEST_CASE("/undo with no turn to take out says so, and /clear starts the context afresh") {
  agent_fixture f;
  f.config.interactive = true;
  auto model_asked = std::make_shared<asked>();
  auto session = f.start_with(spawn_recording_model(f.actors.sys(), model_asked, "reply"),
                              {"/undo", "first", "/clear", "second"});
  REQUIRE(wait_until([&] { return model_asked->count() == 2; }));
  CHECK(model_asked->last() == strings{"second"});
  caf::anon_send(session, submit_atom::value, make_input("/undo"));
  caf::anon_send(session, submit_atom::value, make_input("/undo"));
  caf::anon_send(session, submit_atom::value, make_input("/exit"));
  f.events->wait_for_end();
  auto refusals = f.events->notices("undo");
  REQUIRE(refusals.size() == 2); // nothing at the start, nothing left after the /clear's turn
  CHECK(refusals[0]["text"].get<std::string>().find("nothing to undo") != std::string::npos);
  CHECK(f.transcript_roles() == strings{"user:prompt", "assistant", "system:clear",
                                        "user:prompt", "assistant", "system:undo"});
}

TEST_CASE("/model switches to another model at the turn boundary") {
  agent_fixture f;
  f.config.interactive = true;
  auto first_asked = std::make_shared<asked>();
  auto second_asked = std::make_shared<asked>();
  f.config.switch_model = [&](caf::actor_system& sys,
                              const std::string& spec) -> expected<model_switch> {
    if (spec != "other/model")
      return failure{"unknown model '" + spec + "'"};
    model_switch next;
    next.client = spawn_recording_model(sys, second_asked, "other");
    next.model_name = spec;
    next.system_prompt = std::string{"other prompt"};
    next.budget = f.config.budget;
    return next;
  };
  auto session = f.start_with(spawn_recording_model(f.actors.sys(), first_asked, "first"),
                              {"one", "/model nosuch/x", "/model other/model", "two", "/model"});
  REQUIRE(wait_until([&] { return second_asked->count() == 1; }));
  CHECK(first_asked->count() == 1);
  CHECK(has(second_asked->last(), "one")); // the conversation goes on with the new model
  CHECK(has(second_asked->last(), "two"));
  caf::anon_send(session, submit_atom::value, make_input("/exit"));
  auto ended = f.events->wait_for_end();
  CHECK(ended.result_text == "other 1");
  auto refused = f.events->notices("model");
  REQUIRE(refused.size() == 1);
  CHECK(refused[0]["text"].get<std::string>().find("cannot switch to nosuch/x") !=
        std::string::npos);
  auto answers = f.events->notices("command");
  REQUIRE(!answers.empty());
  CHECK(answers.back()["text"] == "model: other/model");
  auto info = read_json(f.config.session_dir / "session.json");
  CHECK(info["model"] == "other/model");
  CHECK(f.transcript()[2]["origin"] == "model");
}

TEST_CASE("/tokens, /agents, /help and an unknown command answer without reaching the model") {
  agent_fixture f;
  f.config.interactive = true;
  auto model_asked = std::make_shared<asked>();
  auto session = f.start_with(spawn_recording_model(f.actors.sys(), model_asked, "reply"),
                              {"/tokens", "/agents", "/help", "/frobnicate", "/exit"});
  f.events->wait_for_end();
  CHECK(model_asked->count() == 0);
  CHECK(f.transcript().empty());
  auto answers = f.events->notices("command");
  REQUIRE(answers.size() == 3);
  CHECK(answers[0]["text"].get<std::string>().find("tokens of a 128000-token window") !=
        std::string::npos);
  CHECK(answers[1]["text"] == "no subagents in this session");
  for (auto name : {"/help", "/exit", "/undo", "/clear", "/compact", "/model", "/tokens",
                    "/agents", "/rename"})
    CHECK(answers[2]["text"].get<std::string>().find(name) != std::string::npos);
  auto unknown = f.events->notices("unknown_command");
  REQUIRE(unknown.size() == 1);
  CHECK(unknown[0]["text"] == "unknown command /frobnicate; /help lists the commands");
}

TEST_CASE("/agents lists the subagents and their states") {
  agent_fixture f;
  f.config.interactive = true;
  f.enable_subagents({{"child", {json{{"text", "done"}, {"delay_ms", 3000}}}}});
  auto session = f.start(
    {json{{"text", ""},
          {"tool_calls", json::array({{{"name", "task"},
                                       {"input", {{"prompt", "work"}, {"description", "slow job"},
                                                  {"mode", "background"},
                                                  {"model", "scripted:child"}}}}})}},
     text_reply("launched")},
    {"go"});
  REQUIRE(wait_until([&] { return f.transcript().size() == 4; }));
  caf::anon_send(session, submit_atom::value, make_input("/agents"));
  REQUIRE(wait_until([&] { return !f.events->notices("command").empty(); }));
  auto listed = f.events->notices("command")[0]["text"].get<std::string>();
  CHECK(listed.find("running (background)  slow job") != std::string::npos);
  caf::anon_send(session, submit_atom::value, make_input("/exit"));
  f.events->wait_for_end();
}

TEST_CASE("/rename names the session in session.json, and a name the namer finds later loses") {
  agent_fixture f;
  f.config.interactive = true;
  f.config.namer = spawn_namer(f.actors.sys(), model_client_actor{});
  auto session = f.start({text_reply("hello"), text_reply("again")},
                         {"/rename", "/rename my chat", "Fix the parser tests please"});
  REQUIRE(wait_until([&] { return f.transcript().size() == 2; }));
  caf::anon_send(session, submit_atom::value, make_input("/exit"));
  f.events->wait_for_end();
  CHECK(f.events->notices("usage").size() == 1);
  auto info = read_json(f.config.session_dir / "session.json");
  CHECK(info["name"] == "my chat");
  CHECK(info["name_source"] == "user");
  CHECK(info["state"] == "completed");
  CHECK(info["first_prompt"] == "Fix the parser tests please");
}

TEST_CASE("a slow namer does not hold up the loop, and its name arrives later") {
  agent_fixture f;
  f.config.interactive = true;
  // A namer that answers only when the test lets it.
  auto release = std::make_shared<std::promise<void>>();
  auto released = release->get_future().share();
  f.config.namer_uses_model = true;
  f.config.model_name = "anthropic/claude-sonnet-4-5"; // $3 per million tokens in
  f.config.namer = f.actors.sys().spawn<caf::detached>(
    [released](namer_actor::pointer) -> namer_actor::behavior_type {
      return {[released](name_atom, const std::string&,
                         const std::string&) -> caf::result<std::string, token_usage> {
        released.wait_for(std::chrono::seconds{20}); // never a hang, whatever the test does
        token_usage usage;
        usage.input_tokens = 1000000;
        return {std::string{"Parser Test Fixes"}, usage};
      }};
    });
  auto session = f.start({text_reply("first reply"), text_reply("second reply")},
                         {"fix the parser", "and the lexer"});
  // Both turns run while the namer still thinks.
  REQUIRE(wait_until([&] { return f.transcript().size() == 4; }));
  auto before = read_json(f.config.session_dir / "session.json");
  CHECK(before["name"] == "");
  release->set_value();
  REQUIRE(wait_until([&] {
    return read_json(f.config.session_dir / "session.json")["name"] ==
           "Parser Test Fixes";
  }));
  auto named = read_json(f.config.session_dir / "session.json");
  CHECK(named["name_source"] == "model");
  CHECK(named["usage"]["input_tokens"] == 1000000); // the naming call counts and is priced
  CHECK(named["cost_usd"].get<double>() == doctest::Approx(3.0));
  caf::anon_send(session, submit_atom::value, make_input("/exit"));
  f.events->wait_for_end();
}

TEST_CASE("session.json follows the session: running, turns, usage and cost, then its end") {
  agent_fixture f;
  f.config.interactive = true;
  f.config.model_name = "anthropic/claude-sonnet-4-5";
  json priced = {{"text", "ok"},
                 {"usage", {{"input_tokens", 1000000}, {"output_tokens", 100000}}}};
  auto session = f.start({priced}, {"count the files"});
  REQUIRE(wait_until([&] { return f.transcript().size() == 2; }));
  REQUIRE(wait_until([&] {
    return read_json(f.config.session_dir / "session.json")["turns"] == 1;
  }));
  auto running = read_json(f.config.session_dir / "session.json");
  CHECK(running["state"] == "running");
  CHECK(running["cwd"] == f.config.cwd.string());
  CHECK(running["usage"]["input_tokens"] == 1000000);
  // $3 per million input tokens and $15 per million output tokens.
  CHECK(running["cost_usd"].get<double>() == doctest::Approx(4.5));
  caf::anon_send(session, submit_atom::value, make_input("/exit"));
  f.events->wait_for_end();
  auto ended = read_json(f.config.session_dir / "session.json");
  CHECK(ended["state"] == "completed");
  CHECK(ended["name"] == "count the files"); // no namer: the prompt's first words
  CHECK(ended["name_source"] == "prompt");
}
