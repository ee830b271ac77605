#include <doctest/doctest.h>

#include "actors/session.hpp"
#include "store/ids.hpp"
#include "store/session_catalog.hpp"
#include "store/session_lock.hpp"
#include "support/test_support.hpp"

using namespace troupe;
using namespace troupe::test;

namespace {

// A session on disk as a run leaves it: a transcript and its session.json, last active
// `minutes_ago` (session.json's updated_ms: later than the transcript's mtime).
session_paths stored(const session_paths& session, const std::string& name, const std::string& cwd,
                     int minutes_ago, const std::string& state = "completed") {
  auto prompt = nlohmann::json(make_input("prompt of " + session.id())).dump();
  write_file(session.transcript(), prompt + "\n");
  session_info info;
  info.id = session.id();
  info.name = name;
  info.cwd = cwd;
  info.state = state;
  info.turns = 2;
  info.updated_ms = now_ms() + 3600000 - int64_t{minutes_ago} * 60000;
  write_file(session.info(), nlohmann::json(info).dump());
  return session;
}

std::vector<std::string> ids_of(const std::vector<stored_session>& sessions) {
  std::vector<std::string> ids;
  for (auto& s : sessions)
    ids.push_back(s.info.id);
  return ids;
}

} // namespace

TEST_CASE("the catalog lists top-level sessions, the most recently active first") {
  temp_dir home;
  session_catalog catalog{home.path()};
  auto none = catalog.list();
  REQUIRE(none); // no sessions folder yet: none, not an error
  CHECK(none->empty());
  stored(catalog.session("old"), "", "/w", 30);
  stored(catalog.session("new"), "", "/w", 1);
  stored(catalog.session("mid"), "", "/elsewhere", 10);
  std::filesystem::create_directories(catalog.root() / "empty-dir"); // not a session
  stored(catalog.session("mid").agent("agent_x"), "", "/w", 0); // not top-level
  auto all = catalog.list();
  REQUIRE(all);
  CHECK(ids_of(*all) == std::vector<std::string>{"new", "mid", "old"});
  CHECK(all->front().info.turns == 2);
  CHECK_FALSE(all->front().live);
  CHECK(all->front().state_text() == "completed");
}

TEST_CASE("a session is found by id or by a name only it carries") {
  temp_dir home;
  session_catalog catalog{home.path()};
  stored(catalog.session("s1"), "fix the tests", "/w", 3);
  stored(catalog.session("s2"), "shared", "/w", 2);
  stored(catalog.session("s3"), "shared", "/w", 1);
  CHECK(catalog.find("s1")->info.name == "fix the tests");
  CHECK(catalog.find("fix the tests")->info.id == "s1");
  auto ambiguous = catalog.find("shared");
  REQUIRE_FALSE(ambiguous);
  CHECK(ambiguous.error() == "the name 'shared' is carried by 2 sessions (s3, s2): give the id");
  auto unknown = catalog.find("nosuch");
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().rfind("unknown session 'nosuch'", 0) == 0);
  // An id is never a silently created directory.
  CHECK_FALSE(std::filesystem::exists(catalog.session("nosuch").dir()));
  auto bad = catalog.existing("../s1");
  REQUIRE_FALSE(bad);
  CHECK(bad.error() == "invalid session id '../s1'");
}

TEST_CASE("a session that is starting is found by its control file before its transcript") {
  temp_dir home;
  session_catalog catalog{home.path()};
  write_file(catalog.session("starting").control(), "{}");
  auto found = catalog.existing("starting");
  REQUIRE(found);
  CHECK(found->dir() == catalog.session("starting").dir());
}

TEST_CASE("a subagent is found by its id at any depth, and a session's id wins over it") {
  temp_dir home;
  session_catalog catalog{home.path()};
  auto top = stored(catalog.session("top"), "", "/w", 5);
  auto child = stored(top.agent("agent_c"), "", "/w", 4, "running");
  auto grandchild = stored(child.agent("agent_g"), "", "/w", 3);
  auto found = catalog.find_agent("agent_g");
  REQUIRE(found);
  CHECK(found->session.paths == grandchild);
  CHECK(found->top == top);
  CHECK(found->session.paths.path_below_top() == "agents/agent_c/agents/agent_g");
  CHECK(found->also_under.empty());
  // Its top-level session is not running: neither is it, whatever its session.json says.
  auto running = catalog.find_agent("agent_c");
  REQUIRE(running);
  CHECK_FALSE(running->session.live);
  CHECK(running->session.state_text() == "crashed");
  auto lock = session_lock::take(top);
  REQUIRE(lock);
  CHECK(catalog.find_agent("agent_c")->session.live);
  CHECK_FALSE(catalog.find_agent("agent_g")->session.live); // it says it completed
  auto missing = catalog.find_agent("agent_none");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().rfind("unknown agent 'agent_none'", 0) == 0);

  auto as_agent = catalog.find_session_or_agent("agent_g");
  REQUIRE(as_agent);
  REQUIRE(as_agent->agent);
  CHECK(as_agent->session.paths == grandchild);
  auto as_session = catalog.find_session_or_agent("top");
  REQUIRE(as_session);
  CHECK_FALSE(as_session->agent);
  auto neither = catalog.find_session_or_agent("agent_none");
  REQUIRE_FALSE(neither);
  CHECK(neither.error() == "unknown session 'agent_none': no session has that id or name and no "
                           "subagent that id (troupe ls --all lists them)");
}

TEST_CASE("of a forked agent's copies the running one wins, else the newest") {
  temp_dir home;
  session_catalog catalog{home.path()};
  auto original = stored(catalog.session("original"), "", "/w", 9);
  auto fork = stored(catalog.session("fork"), "", "/w", 8);
  stored(original.agent("agent_a"), "", "/w", 7, "running");
  stored(fork.agent("agent_a"), "", "/w", 2, "running");
  auto newest = catalog.find_agent("agent_a");
  REQUIRE(newest);
  CHECK(newest->top == fork);
  CHECK(newest->also_under == std::vector<std::string>{"original"});
  auto lock = session_lock::take(original);
  REQUIRE(lock);
  auto live = catalog.find_agent("agent_a");
  REQUIRE(live);
  CHECK(live->top == original);
  CHECK(live->also_under == std::vector<std::string>{"fork"});
}

TEST_CASE("a session's subagents form a tree, depth first and sorted by id") {
  temp_dir home;
  session_catalog catalog{home.path()};
  auto top = stored(catalog.session("top"), "", "/w", 5, "running");
  stored(top.agent("agent_b"), "", "/w", 4);
  auto a = stored(top.agent("agent_a"), "", "/w", 4, "running");
  stored(a.agent("agent_a2"), "", "/w", 3);
  std::filesystem::create_directories(top.agent("agent_empty").dir()); // no transcript: none
  auto lock = session_lock::take(top);
  REQUIRE(lock);
  auto session = read_session(top);
  CHECK(session.live);
  auto tree = agent_tree(session);
  REQUIRE(tree.size() == 3);
  CHECK(tree[0].agent.info.id == "agent_a");
  CHECK(tree[0].parent_id == "top");
  CHECK(tree[0].depth == 1);
  CHECK(tree[0].agent.live); // its top-level session runs and it says it runs
  CHECK(tree[1].agent.info.id == "agent_a2");
  CHECK(tree[1].parent_id == "agent_a");
  CHECK(tree[1].depth == 2);
  CHECK_FALSE(tree[1].agent.live);
  CHECK(tree[2].agent.info.id == "agent_b");
  CHECK(tree[2].depth == 1);
  auto infos = agents_of(top);
  REQUIRE(infos.size() == 2);
  CHECK(infos[0].id == "agent_a");
}

TEST_CASE("a session without session.json is told by its transcript and state") {
  temp_dir home;
  session_catalog catalog{home.path()};
  auto old = catalog.session("old");
  auto prompt = make_input("an early prompt");
  prompt.timestamp_ms = 42;
  write_file(old.transcript(), nlohmann::json(prompt).dump() + "\n");
  loop_state state;
  state.turn_count = 6;
  state.total_steps = 9;
  write_file(old.state(), nlohmann::json(state).dump());
  auto s = read_session(old);
  CHECK(s.info.id == "old");
  CHECK(s.info.first_prompt == "an early prompt");
  CHECK(s.info.created_ms == 42);
  CHECK(s.info.turns == 6);
  CHECK(s.info.steps == 9);
  CHECK(s.state_text() == "unknown");
  CHECK(s.last_activity_ms > 0);
  // A session.json that is not a session's is passed over the same way.
  write_file(old.info(), "[]");
  CHECK(read_session(old).info.turns == 6);
}

TEST_CASE("the newest session of a workspace is the one --continue picks") {
  temp_dir home;
  session_catalog catalog{home.path()};
  stored(catalog.session("w-old"), "", "/work/a", 20);
  stored(catalog.session("w-new"), "", "/work/a", 2);
  stored(catalog.session("other"), "", "/work/b", 1);
  CHECK(catalog.newest_in("/work/a")->info.id == "w-new");
  auto none = catalog.newest_in("/work/c");
  REQUIRE_FALSE(none);
  CHECK(none.error() == "no session has run in /work/c yet (troupe ls lists them all)");
}

TEST_CASE("loading a session to run it again gives its history, counters and what was repaired") {
  temp_dir home;
  session_catalog catalog{home.path()};
  auto s = catalog.session("again");
  auto line = nlohmann::json(make_input("hello")).dump();
  write_file(s.transcript(), line + "\n" + line.substr(0, 10));
  loop_state state;
  state.turn_count = 3;
  write_file(s.state(), nlohmann::json(state).dump());
  auto read = load_session(s, transcript_access::reader);
  REQUIRE(read);
  CHECK(read->history.size() == 1);
  CHECK(read->repair_note.empty()); // a reader repairs nothing
  REQUIRE(read->state);
  CHECK(read->state->turn_count == 3);
  auto owned = load_session(s, transcript_access::owner);
  REQUIRE(owned);
  CHECK(owned->repair_note.find("torn last line 2") != std::string::npos);
  CHECK(read_file(s.transcript()) == line + "\n");
  write_file(s.state(), "{\"turn_count\": ");
  auto torn_state = load_session(s, transcript_access::owner);
  REQUIRE(torn_state);
  CHECK_FALSE(torn_state->state);
  CHECK(torn_state->state_problem.find("is not valid JSON") != std::string::npos);
  std::filesystem::remove(s.state());
  auto no_state = load_session(s, transcript_access::owner);
  REQUIRE(no_state);
  CHECK_FALSE(no_state->state);
  CHECK(no_state->state_problem.empty()); // a session that never stepped has none
  auto missing = load_session(catalog.session("none"), transcript_access::owner);
  REQUIRE_FALSE(missing);
}

TEST_CASE("removal takes a stopped session with everything below it, never a running one") {
  temp_dir home;
  session_catalog catalog{home.path()};
  auto s = stored(catalog.session("gone"), "", "/w", 1);
  stored(s.agent("agent_a"), "", "/w", 1);
  write_file(s.tool_results() / "call_1.txt", "output");
  {
    auto lock = session_lock::take(s);
    REQUIRE(lock);
    auto running = remove_session(read_session(s));
    REQUIRE_FALSE(running);
    CHECK(running.error() == "session gone is running; stop it first (troupe interrupt gone)");
    CHECK(std::filesystem::exists(s.transcript()));
  }
  REQUIRE(remove_session(read_session(s)));
  CHECK_FALSE(std::filesystem::exists(s.dir()));
  CHECK(catalog.list()->empty());
}
