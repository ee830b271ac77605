#include <doctest/doctest.h>

#include "store/session_paths.hpp"

using namespace troupe;

TEST_CASE("a session's files are named inside its directory") {
  auto s = session_paths::top_level("/h", "20261202-abc");
  CHECK(s.dir() == "/h/sessions/20261202-abc");
  CHECK(s.id() == "20261202-abc");
  CHECK(sessions_root("/h") == "/h/sessions");
  CHECK(s.transcript() == "/h/sessions/20261202-abc/transcript.jsonl");
  CHECK(s.state() == "/h/sessions/20261202-abc/state.json");
  CHECK(s.info() == "/h/sessions/20261202-abc/session.json");
  CHECK(s.queue() == "/h/sessions/20261202-abc/queue.jsonl");
  CHECK(s.lock() == "/h/sessions/20261202-abc/session.lock");
  CHECK(s.control() == "/h/sessions/20261202-abc/control.json");
  CHECK(s.tool_results() == "/h/sessions/20261202-abc/tool-results");
  CHECK(s.tasks() == "/h/sessions/20261202-abc/tasks");
  CHECK(s.agents() == "/h/sessions/20261202-abc/agents");
}

TEST_CASE("a subagent lives under its launcher's agents/, and knows its top-level session") {
  auto top = session_paths::top_level("/h", "s1");
  auto child = top.agent("agent_a");
  auto grandchild = child.agent("agent_b");
  CHECK(grandchild.dir() == "/h/sessions/s1/agents/agent_a/agents/agent_b");
  CHECK(grandchild.id() == "agent_b");
  CHECK_FALSE(top.is_agent());
  CHECK(child.is_agent());
  CHECK(grandchild.is_agent());
  CHECK_FALSE(top.launcher());
  CHECK(*child.launcher() == top);
  CHECK(*grandchild.launcher() == child);
  CHECK(grandchild.launcher()->queue() == "/h/sessions/s1/agents/agent_a/queue.jsonl");
  CHECK(top.top() == top);
  CHECK(child.top() == top);
  CHECK(grandchild.top() == top);
  CHECK(top.path_below_top().empty());
  CHECK(child.path_below_top() == "agents/agent_a");
  CHECK(grandchild.path_below_top() == "agents/agent_a/agents/agent_b");
}

TEST_CASE("a session named 'agents' is not taken for a subagent, nor a session for its parent") {
  // <home>/sessions/agents is a top-level session whose id happens to be "agents".
  auto odd = session_paths::top_level("/h", "agents");
  CHECK_FALSE(odd.is_agent());
  CHECK(odd.agent("x").is_agent());
  CHECK(*odd.agent("x").launcher() == odd);
}

TEST_CASE("what belongs to the original is its lock, control files and queue") {
  auto s = session_paths::top_level("/h", "s");
  for (const char* own : {"session.lock", "control.json", "control.sock", "queue.jsonl",
                          "queue.jsonl.bad"})
    CHECK_MESSAGE(s.belongs_to_original(own), own);
  for (const char* copied : {"transcript.jsonl", "state.json", "session.json", "tool-results",
                             "queue.jsonl.torn", "control.json.tmp", "agents"})
    CHECK_FALSE_MESSAGE(s.belongs_to_original(copied), copied);
}
