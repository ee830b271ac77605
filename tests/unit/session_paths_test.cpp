#include <doctest/doctest.h>

#include <unistd.h>

#include <fstream>

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

TEST_CASE("a path below a session is taken one agent at a time") {
  auto one = first_agent_of("agents/agent_a");
  REQUIRE(one);
  CHECK(one->agent_id == "agent_a");
  CHECK(one->below.empty());
  auto two = first_agent_of("agents/agent_a/agents/agent_b/agents/agent_c");
  REQUIRE(two);
  CHECK(two->agent_id == "agent_a");
  CHECK(two->below == "agents/agent_b/agents/agent_c");
  auto next = first_agent_of(two->below);
  REQUIRE(next);
  CHECK(next->agent_id == "agent_b");
  CHECK(next->below == "agents/agent_c");
  // What a session's own path below its top gives back is taken apart the same way.
  auto deep = session_paths::top_level("/h", "s").agent("x").agent("y");
  auto down = first_agent_of(deep.path_below_top());
  REQUIRE(down);
  CHECK(down->agent_id == "x");
  CHECK(down->below == "agents/y");
  for (const char* bad : {"", "agent_a", "agents/", "agents//x", "agents/a/", "agents/a/b",
                          "agents/a/tasks/b", "agents/a/agents/", "/agents/a"})
    CHECK_FALSE_MESSAGE(first_agent_of(bad), bad);
}

TEST_CASE("a directory holds a session when it has a transcript") {
  auto dir = std::filesystem::temp_directory_path() /
             ("troupe-paths-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  session_paths s{dir};
  CHECK_FALSE(holds_session(s));
  std::filesystem::create_directories(dir);
  CHECK_FALSE(holds_session(s)); // a directory alone is a free id (or one still starting)
  std::ofstream{s.transcript()};
  CHECK(holds_session(s));
  std::filesystem::remove_all(dir);
}

TEST_CASE("set-aside and torn lines go beside the file they came from") {
  auto s = session_paths::top_level("/h", "s");
  CHECK(set_aside_path(s.queue()) == "/h/sessions/s/queue.jsonl.bad");
  CHECK(torn_lines_path(s.transcript()) == "/h/sessions/s/transcript.jsonl.torn");
}
