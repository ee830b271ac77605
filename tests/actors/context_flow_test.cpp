// Context management inside the actors: max-output continuations joined by the step, the
// compaction hooks, compaction in the loop state, and interrupts during a compaction.

#include <doctest/doctest.h>

#include <thread>

#include "context/compaction.hpp"
#include "support/agent_fixture.hpp"

using namespace troupe;
using namespace troupe::test;
using nlohmann::json;
using strings = std::vector<std::string>;

namespace {

json cut(const std::string& text) { return {{"text", text}, {"stop_reason", "max_tokens"}}; }

} // namespace

TEST_CASE("a block cut at the output limit is joined with its continuation and runs") {
  agent_fixture f;
  auto ended = f.run({cut("```shell\necho hel"), text_reply("lo\n```"), cut("The output was"),
                      text_reply(" hello.")});
  CHECK(ended.reason == terminal_reason::completed);
  CHECK(f.transcript_roles() == strings{"user:prompt", "assistant", "tool", "assistant"});
  auto log = f.transcript();
  CHECK(log[1]["content"] == "```shell\necho hello\n```");
  CHECK(log[2]["content"] == "hello\n");
  CHECK(log[3]["content"] == "The output was hello.");
  CHECK(ended.result_text == "The output was hello.");
  CHECK(ended.state.total_steps == 2);
  CHECK(ended.state.max_output_recovery_count == 1);
}

TEST_CASE("continuations stop after three, a call still cut then is dropped with a note") {
  agent_fixture f;
  json last = cut("y");
  last["tool_calls"] = json::array({{{"name", "shell"}, {"input", {{"command", "echo never"}}}}});
  auto ended = f.run({cut("x"), cut("x"), cut("x"), last, text_reply("unused")});
  CHECK(ended.reason == terminal_reason::completed);
  CHECK(ended.state.max_output_recovery_count == 3);
  CHECK(f.transcript_roles() == strings{"user:prompt", "assistant", "system:max_output"});
  auto log = f.transcript();
  CHECK(log[1]["content"] == "xxxy");
  CHECK(!log[1].contains("tool_calls"));
  CHECK(log[2]["content"].get<std::string>().find("unfinished call to the shell tool was not "
                                                   "run") != std::string::npos);
}

TEST_CASE("compact hooks fire once around a compaction, post-compact messages follow it") {
  agent_fixture f;
  auto order = std::make_shared<strings>();
  f.config.hooks.emplace_back(hook_point::pre_compact, [order](const hook_context& ctx) {
    order->push_back(to_string(ctx.point));
    return std::vector<message>{make_input("focus on the numbers")};
  });
  f.config.hooks.emplace_back(hook_point::post_compact, [order](const hook_context& ctx) {
    order->push_back(std::string{to_string(ctx.point)} + " after " + to_string(ctx.messages.back()->origin));
    message m;
    m.role = role::system;
    m.content = "re-attached: project notes";
    return std::vector<message>{m};
  });
  auto ended = f.run({shell_reply("echo 42"), text_reply("done"), text_reply("SUMMARY")},
                     {"do the task", "/compact keep it short"});
  CHECK(ended.reason == terminal_reason::completed);
  CHECK(*order == strings{"compact.pre", "compact.post after compact_boundary"});
  CHECK(f.transcript_roles() == strings{"user:prompt", "assistant", "tool", "assistant",
                                        "system:compact_boundary", "system:hook"});
  auto boundary = f.transcript()[4];
  CHECK(boundary["content"] == "SUMMARY");
  CHECK(boundary["meta"]["trigger"] == "manual");
  CHECK(boundary["meta"]["instructions"] == "keep it short\nfocus on the numbers");
  CHECK(boundary["meta"]["summarized_messages"] == 4);
  CHECK(ended.state.auto_compact.compacted);
  CHECK(ended.state.auto_compact.consecutive_failures == 0);
  CHECK(f.state()["auto_compact"]["compacted"] == true);
}

TEST_CASE("/compact with nothing since the last boundary says so and goes on") {
  agent_fixture f;
  auto ended = f.run({text_reply("never asked")}, {"/compact"});
  CHECK(ended.reason == terminal_reason::completed);
  REQUIRE(f.events->notices("compact").size() == 1);
  CHECK(f.events->notices("compact")[0]["text"].get<std::string>().find("nothing to compact") !=
        std::string::npos);
}

TEST_CASE("an interrupt during a compaction cancels it and ends the run as interrupted") {
  agent_fixture f;
  auto session = f.start({text_reply("done"), {{"text", "slow summary"}, {"delay_ms", 20000}}},
                         {"do the task", "/compact"});
  REQUIRE(wait_until([&] { return !f.events->notices("compacting").empty(); }));
  auto sent = std::chrono::steady_clock::now();
  caf::anon_send<caf::message_priority::high>(session, interrupt_atom::value);
  auto ended = f.events->wait_for_end(std::chrono::seconds{5});
  CHECK(std::chrono::steady_clock::now() - sent < std::chrono::seconds{2});
  CHECK(ended.reason == terminal_reason::interrupted);
  for (auto& role : f.transcript_roles())
    CHECK(role != "system:compact_boundary");
}

TEST_CASE("auto-compaction runs before the step whose request would pass the threshold") {
  agent_fixture f;
  f.config.budget = context_budget{model_limits{4000, 1000}};
  // The prompt alone passes the 2600-token threshold: the first model call is the summary.
  auto ended = f.run({text_reply("SUMMARY of a long prompt"), text_reply("answered")},
                     {std::string(12000, 'p')});
  CHECK(ended.reason == terminal_reason::completed);
  CHECK(ended.result_text == "answered");
  CHECK(f.transcript_roles() ==
        strings{"user:prompt", "system:compact_boundary", "assistant"});
  auto meta = f.transcript()[1]["meta"];
  CHECK(meta["trigger"] == "auto");
  CHECK(meta["pre_tokens"].get<int64_t>() > 2600);
  CHECK(meta["post_tokens"].get<int64_t>() < 2600);
  CHECK(ended.state.total_steps == 1);
}

TEST_CASE("the provider's reported usage calibrates the projection") {
  for (bool calibrated : {false, true}) {
    CAPTURE(calibrated);
    agent_fixture f;
    f.config.budget = context_budget{model_limits{4000, 1000}};
    // ~1800 tokens estimated for the first request: under the 2600-token threshold. A provider
    // that counts twice that makes the second request ~3600: a compaction comes first.
    auto first = shell_reply("echo hi");
    if (calibrated)
      first["usage"] = {{"input_tokens", 3600}, {"output_tokens", 10}};
    auto ended = f.run({first, text_reply("SUMMARY"), text_reply("done")},
                       {std::string(4000, 'p')});
    CHECK(ended.reason == terminal_reason::completed);
    bool compacted = false;
    for (auto& role : f.transcript_roles())
      compacted = compacted || role == "system:compact_boundary";
    CHECK(compacted == calibrated);
  }
}

TEST_CASE("a session that stopped right after a mid-turn compaction answers on resume") {
  for (bool mid_turn : {true, false}) {
    CAPTURE(mid_turn);
    agent_fixture f;
    f.config.history.push_back(make_input("the question"));
    if (!mid_turn) {
      message answer;
      answer.id = "msg_answer";
      answer.role = role::assistant;
      answer.content = "the answer";
      f.config.history.push_back(answer);
    }
    compaction_record record;
    record.summary = "SUMMARY";
    auto boundary = make_boundary(record);
    boundary.id = "msg_boundary";
    f.config.history.push_back(boundary);
    auto ended = f.run({text_reply("answered after the resume")}, {});
    CHECK(ended.reason == terminal_reason::completed);
    CHECK(ended.result_text == (mid_turn ? "answered after the resume" : "the answer"));
  }
}
