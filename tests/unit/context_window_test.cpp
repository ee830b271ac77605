// Token estimates, the model table, the context window since the last boundary (elision,
// calibration, compaction plans) and the compaction request.

#include <doctest/doctest.h>

#include "context/compaction.hpp"
#include "context/context_window.hpp"

using namespace troupe;

namespace {

int next_id = 0;

message_ptr make(role r, std::string content, std::string tool_name = {}) {
  message m;
  m.id = "m" + std::to_string(next_id++);
  m.role = r;
  m.content = std::move(content);
  if (r == role::tool) {
    m.tool_name = tool_name.empty() ? "shell" : tool_name;
    m.tool_call_id = "call_" + m.id;
  }
  return std::make_shared<const message>(std::move(m));
}

message_ptr boundary(const std::string& summary, const std::string& preserved_from) {
  compaction_record record;
  record.summary = summary;
  record.preserved_from = preserved_from;
  auto m = make_boundary(record);
  m.id = "b" + std::to_string(next_id++);
  return std::make_shared<const message>(std::move(m));
}

context_budget window_of(int64_t tokens, int64_t output = 1000) {
  return context_budget{model_limits{tokens, output}};
}

std::vector<std::string> contents(const context_snapshot& view) {
  std::vector<std::string> out;
  for (auto& m : view.messages)
    out.push_back(m->content);
  return out;
}

} // namespace

TEST_CASE("token estimates: four bytes a token plus a per-message overhead") {
  CHECK(estimate_tokens(std::string(400, 'a')) == 100);
  CHECK(estimate_tokens(std::string(401, 'a')) == 101);
  message m;
  m.content = std::string(400, 'a');
  CHECK(estimate_tokens(m) == 104);
  m.tool_calls.push_back({"c1", "shell", {{"command", "ls"}}, call_format::native});
  CHECK(estimate_tokens(m) > 104 + 10);
}

TEST_CASE("the model table knows the families and defaults the rest") {
  CHECK(limits_for_model("anthropic/claude-sonnet-4-5").context_window == 200000);
  CHECK(limits_for_model("claude-3-5-haiku-latest").max_output_tokens == 8192);
  CHECK(limits_for_model("openai/gpt-4.1").context_window == 1047576);
  CHECK(limits_for_model("gpt-4o-mini").context_window == 128000);
  CHECK(limits_for_model("ollama/llama3.1:8b").context_window == 131072);
  auto unknown = limits_for_model("scripted:demo");
  CHECK(unknown.context_window == 128000);
  CHECK(unknown.max_output_tokens == 8192);
}

TEST_CASE("thresholds scale with the window") {
  auto small = window_of(4000, 32000);
  CHECK(small.output_reserve() == 1000); // a quarter of the window at most
  CHECK(small.safety_buffer() == 400);
  CHECK(small.compact_threshold() == 2600);
  auto large = window_of(200000, 32000);
  CHECK(large.compact_threshold() == 200000 - 32000 - 13000);
}

TEST_CASE("the projection counts fixed tokens and messages, and calibration scales it") {
  context_window w{window_of(100000)};
  w.set_fixed_tokens(1000);
  w.append(make(role::user, std::string(4000, 'u')));
  CHECK(w.estimated_tokens() == 1000 + 1004);
  CHECK(w.projected_tokens() == 2004);
  w.calibrate(2004, 3006);
  CHECK(w.projected_tokens() == 3006);
  w.calibrate(2004, 10); // placeholder usage: ignored
  CHECK(w.projected_tokens() == 3006);
  CHECK_FALSE(w.over_threshold());
  w.append(make(role::user, std::string(400000, 'u')));
  CHECK(w.over_threshold());
}

TEST_CASE("old large tool results are elided past their budget, the current step's never are") {
  context_window w{window_of(4000)}; // tool result budget: 1300 tokens
  w.append(make(role::user, "task"));
  w.append(make(role::assistant, "step 1"));
  auto first = make(role::tool, std::string(2400, '1')); // 600 tokens
  w.append(first);
  w.append(make(role::assistant, "step 2"));
  w.append(make(role::tool, std::string(2400, '2')));
  CHECK(w.elided_count() == 0); // 1200 tokens of results: within the budget
  w.append(make(role::assistant, "step 3"));
  w.append(make(role::tool, std::string(2400, '3')));
  w.append(make(role::tool, std::string(2400, '4')));
  CHECK(w.elided_count() == 2); // the oldest two went; the current step's two stay
  auto view = contents(w.snapshot());
  CHECK(view[2].find("Old tool result elided") != std::string::npos);
  CHECK(view[2].find("2400 bytes of shell output") != std::string::npos);
  CHECK(view[4].find("Old tool result elided") != std::string::npos);
  CHECK(view[6] == std::string(2400, '3'));
  CHECK(view[7] == std::string(2400, '4'));
  CHECK(first->content == std::string(2400, '1')); // the log's message is untouched
  CHECK(w.snapshot().messages[2]->tool_call_id == first->tool_call_id);
}

TEST_CASE("a boundary replaces what precedes it with its summary and keeps the preserved tail") {
  context_window w{window_of(100000)};
  w.append(make(role::user, "old question"));
  w.append(make(role::assistant, "old answer"));
  auto kept = make(role::user, "recent question");
  w.append(kept);
  w.append(make(role::assistant, "recent answer"));
  w.append(boundary("what happened", kept->id));
  w.append(make(role::user, "new question"));
  auto view = w.snapshot();
  REQUIRE(view.messages.size() == 4);
  CHECK(view.messages[0]->role == role::user);
  CHECK(view.messages[0]->origin == message_origin::compact_summary);
  CHECK(view.messages[0]->content.find("what happened") != std::string::npos);
  CHECK(contents(view)[1] == "recent question");
  CHECK(contents(view)[2] == "recent answer");
  CHECK(contents(view)[3] == "new question");
  // A boundary without a preserved tail keeps nothing but the summary.
  w.append(boundary("everything so far", ""));
  CHECK(contents(w.snapshot()).size() == 1);
}

TEST_CASE("the compaction plan keeps a recent tail that starts at a user or assistant message") {
  context_window w{window_of(8000)}; // preserve budget: (8000 - 1000 - 800) / 4 = 1550 tokens
  w.append(make(role::user, std::string(8000, 'q')));
  w.append(make(role::assistant, "a1"));
  w.append(make(role::tool, std::string(3200, 'r'))); // 804 tokens
  auto tail_start = make(role::assistant, "a2");
  w.append(tail_start);
  w.append(make(role::tool, std::string(3200, 's')));
  auto plan = w.plan_compaction();
  CHECK(plan.preserved_from == tail_start->id);
  CHECK(plan.to_summarize.size() == 3);
  CHECK(plan.preserved_tokens > 800);
}

TEST_CASE("a plan never starts the kept tail at a tool result, and is empty with nothing new") {
  context_window w{window_of(8000)};
  w.append(make(role::user, std::string(8000, 'q')));
  w.append(make(role::assistant, "a1"));
  w.append(make(role::tool, std::string(7000, 'r'))); // alone past the preserve budget
  auto plan = w.plan_compaction();
  CHECK(plan.preserved_from.empty());
  CHECK(plan.to_summarize.size() == 3);

  context_window fresh{window_of(8000)};
  fresh.append(boundary("summary only", ""));
  CHECK(fresh.plan_compaction().empty());
}

TEST_CASE("the compaction request holds the old summary, clipped results and the instructions") {
  context_window w{window_of(100000)};
  w.append(boundary("EARLIER-SUMMARY", ""));
  w.append(make(role::user, "fix the bug"));
  w.append(make(role::assistant, "looking"));
  w.append(make(role::tool, "HEAD" + std::string(10000, 'x') + "TAIL"));
  auto plan = w.plan_compaction();
  compaction_trigger trigger{"manual", false, "keep the file names"};
  auto request = compaction_request(plan, trigger, w.budget());
  CHECK(request.tools->empty());
  CHECK(request.system_prompt->find("summarise") != std::string::npos);
  REQUIRE(request.context.messages.size() == 1);
  const auto& text = request.context.messages[0]->content;
  CHECK(text.find("EARLIER-SUMMARY") < text.find("fix the bug"));
  CHECK(text.find("HEAD") != std::string::npos);
  CHECK(text.find("TAIL") != std::string::npos);
  CHECK(text.find("bytes left out") != std::string::npos);
  CHECK(text.size() < 6000);
  CHECK(text.find("keep the file names") != std::string::npos);
}

TEST_CASE("a transcript too big for the window leaves out its oldest messages, not the summary") {
  context_window w{window_of(4000)};
  w.append(boundary("EARLIER-SUMMARY", ""));
  for (int i = 0; i < 40; ++i)
    w.append(make(role::user, "message-" + std::to_string(i) + " " + std::string(400, 'm')));
  auto plan = w.plan_compaction();
  auto request = compaction_request(plan, {}, w.budget());
  const auto& text = request.context.messages[0]->content;
  CHECK(text.find("EARLIER-SUMMARY") != std::string::npos);
  auto newest = plan.to_summarize.back()->content.substr(0, 12);
  CHECK(text.find(newest) != std::string::npos);
  CHECK(text.find("message-0 ") == std::string::npos);
  CHECK(text.find("older messages left out") != std::string::npos);
  CHECK(estimate_tokens(text) <= w.budget().compact_threshold());
}

TEST_CASE("the boundary records trigger and token counts") {
  compaction_record record;
  record.trigger = {"auto", true, ""};
  record.summary = "S";
  record.tokens_before = 5000;
  record.tokens_after = 900;
  record.summarized_messages = 12;
  auto m = make_boundary(record);
  CHECK(is_compact_boundary(m));
  CHECK(m.content == "S");
  CHECK(m.meta["trigger"] == "auto");
  CHECK(m.meta["reactive"] == true);
  CHECK(m.meta["pre_tokens"] == 5000);
  CHECK(m.meta["post_tokens"] == 900);
  CHECK(m.meta["summarized_messages"] == 12);
}
