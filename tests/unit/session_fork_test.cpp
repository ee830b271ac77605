#include <doctest/doctest.h>

#include <sys/stat.h>

#include "actors/session.hpp"
#include "store/session_fork.hpp"
#include "support/file_modes.hpp"
#include "support/test_support.hpp"

using namespace troupe;
using namespace troupe::test;

TEST_CASE("a fork copies what the session made, pointed at the copy, and leaves the rest") {
  temp_dir home;
  session_catalog catalog{home.path()};
  auto from = catalog.session("src");
  auto saved = from.tool_results() / "call_1.txt";
  auto said = make_input("see " + saved.string());
  auto line = nlohmann::json(said).dump();
  write_file(from.state(), "{\"turn_count\": 1}");
  write_file(from.info(), "{\"name\": \"original\"}");
  write_file(from.queue(), "{\"id\": \"ntf_1\"}\n");
  write_file(from.queue().string() + ".bad", "x\n");
  write_file(from.lock(), "");
  write_file(from.control(), "{\"token\": \"secret\"}");
  write_file(saved, "whole output");
  ::chmod(saved.c_str(), 0644);
  write_file(from.tasks() / "task_1.log", "log");
  auto agent = from.agent("agent_a");
  write_file(agent.transcript(), nlohmann::json(make_input("child " + from.dir().string() +
                                                           "/x")).dump() + "\n");
  write_file(agent.info(), "{\"name\": \"child\"}");
  write_file(agent.queue(), "{\"id\": \"ntf_2\"}\n");
  std::filesystem::create_symlink("tool-results/call_1.txt", from.dir() / "link");
  // The last line is being written by the running original: not copied. A session whose id
  // extends the source's is not a path into it.
  auto neighbour = catalog.session("src2");
  auto mention = make_input("not mine: " + neighbour.dir().string() + "/x");
  write_file(from.transcript(),
             line + "\n" + nlohmann::json(mention).dump() + "\n" + line.substr(0, 12));

  auto to = catalog.session("copy");
  auto forked = fork_session(read_session(from), to);
  REQUIRE(forked);
  CHECK(*forked == to);
  auto copied = load_transcript(to.transcript(), transcript_access::reader);
  REQUIRE(copied);
  REQUIRE(copied->messages.size() == 2); // the half-written line stayed behind
  CHECK(copied->messages[0].content == "see " + (to.tool_results() / "call_1.txt").string());
  CHECK(copied->messages[1].content == mention.content);
  CHECK(read_file(to.tool_results() / "call_1.txt") == "whole output");
  CHECK(mode_of(to.tool_results() / "call_1.txt") == 0600);
  CHECK(mode_of(to.dir()) == 0700);
  CHECK(read_file(to.tasks() / "task_1.log") == "log");
  CHECK(read_file(to.state()) == "{\"turn_count\": 1}");
  CHECK(std::filesystem::is_symlink(to.dir() / "link"));
  // Its subagents go with it, resumable in the copy, with their session.json.
  auto child = to.agent("agent_a");
  CHECK(load_transcript(child.transcript(), transcript_access::reader)->messages[0].content ==
        "child " + to.dir().string() + "/x");
  CHECK(read_file(child.info()) == "{\"name\": \"child\"}");
  // What belongs to the live original, and its own session.json, stay with it.
  for (const auto& left : {to.info(), to.queue(), to.lock(), to.control(), child.queue()})
    CHECK_FALSE_MESSAGE(std::filesystem::exists(left), left.string());
  CHECK_FALSE(std::filesystem::exists(to.queue().string() + ".bad"));
  CHECK(read_file(from.queue()) == "{\"id\": \"ntf_1\"}\n"); // the original is untouched
}

TEST_CASE("a fork copies what the tools named like a session's own files") {
  temp_dir home;
  session_catalog catalog{home.path()};
  // A session whose id is "agents" is no subagent, and neither are its tools' folders.
  for (const char* id : {"src", "agents"}) {
    auto from = catalog.session(id);
    write_file(from.transcript(), nlohmann::json(make_input("a")).dump() + "\n");
    for (const char* named : {"tool-results/queue.jsonl", "tasks/control.json",
                              "tool-results/agents/x/session.lock", "tasks/session.json"})
      write_file(from.dir() / named, named);
    auto to = catalog.session(std::string{id} + "-copy");
    REQUIRE(fork_session(read_session(from), to));
    for (const char* named : {"tool-results/queue.jsonl", "tasks/control.json",
                              "tool-results/agents/x/session.lock", "tasks/session.json"}) {
      INFO(id << ": " << named);
      CHECK(read_file(to.dir() / named) == named);
    }
  }
}

TEST_CASE("a fork never overwrites a session that exists") {
  temp_dir home;
  session_catalog catalog{home.path()};
  auto from = catalog.session("src");
  write_file(from.transcript(), nlohmann::json(make_input("a")).dump() + "\n");
  auto taken = catalog.session("taken");
  write_file(taken.transcript(), "kept\n");
  auto refused = fork_session(read_session(from), taken);
  REQUIRE_FALSE(refused);
  CHECK(refused.error() == "cannot fork into taken: that session exists already");
  CHECK(read_file(taken.transcript()) == "kept\n");
}

TEST_CASE("a fork that fails part-way takes back what it wrote, but not the caller's lock") {
  temp_dir home;
  session_catalog catalog{home.path()};
  auto from = catalog.session("src");
  write_file(from.transcript(), nlohmann::json(make_input("a")).dump() + "\n");
  write_file(from.tasks() / "task_1.log", "log");
  auto to = catalog.session("copy");
  write_file(to.lock(), "");
  // A directory where the copy's tasks/ file must go: the copy cannot be written.
  std::filesystem::create_directories(to.tasks() / "task_1.log");
  write_file(to.tasks() / "task_1.log" / "inside", "x");
  auto failed = fork_session(read_session(from), to);
  REQUIRE_FALSE(failed);
  CHECK(failed.error().find("cannot copy " + (from.tasks() / "task_1.log").string()) == 0);
  CHECK(std::filesystem::exists(to.lock()));
  CHECK_FALSE(std::filesystem::exists(to.transcript()));
  CHECK_FALSE(std::filesystem::exists(to.tasks()));
}
