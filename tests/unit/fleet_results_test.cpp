#include <doctest/doctest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "store/fleet_results.hpp"
#include "store/session_catalog.hpp"
#include "store/session_lock.hpp"
#include "store/state_files.hpp"
#include "support/test_support.hpp"

using namespace troupe;
using namespace troupe::test;

namespace {

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out{path, std::ios::binary};
  out << text;
}

} // namespace

TEST_CASE("a results line cut short by a kill does not count, and is cut off before the next") {
  temp_dir dir;
  auto path = dir.path() / "out" / "results.jsonl";
  {
    auto writer = fleet_results_writer::open(path);
    REQUIRE(writer);
    REQUIRE(writer->append(R"({"id":"a","terminal_reason":"completed"})"));
  }
  // Whole but for its newline: still a line the kill cut, whose task runs again.
  std::ofstream{path, std::ios::app} << R"({"id":"b","terminal_reason":"completed"})";
  auto read = read_fleet_results(path);
  REQUIRE(read);
  CHECK(read->by_id.size() == 1);
  CHECK(read->by_id.count("a") == 1);
  CHECK(read->skipped == std::vector<std::string>{"line 2: cut short"});
  {
    std::string cut;
    auto writer = fleet_results_writer::open(path, &cut);
    REQUIRE(writer);
    CHECK(cut == R"({"id":"b","terminal_reason":"completed"})");
    REQUIRE(writer->append(R"({"id":"b","terminal_reason":"max_turns"})"));
  }
  read = read_fleet_results(path);
  REQUIRE(read);
  CHECK(read->by_id.size() == 2);
  CHECK(read->by_id.at("b").terminal_reason == "max_turns");
  CHECK(read->skipped.empty());
  // One line per id in the file itself.
  std::ifstream in{path};
  std::string line;
  int lines = 0;
  while (std::getline(in, line))
    ++lines;
  CHECK(lines == 2);
  // A file that is one torn line and nothing else is emptied.
  auto lone = dir.path() / "lone.jsonl";
  write_text(lone, std::string(5000, 'x'));
  std::string cut;
  REQUIRE(fleet_results_writer::open(lone, &cut));
  CHECK(cut.size() == 5000);
  CHECK(std::filesystem::file_size(lone) == 0);
  // One writer at a time, whichever fleet it belongs to.
  auto first = fleet_results_writer::open(lone);
  REQUIRE(first);
  auto second = fleet_results_writer::open(lone);
  REQUIRE_FALSE(second);
  CHECK(second.error().find("is being written by another fleet") != std::string::npos);
}

TEST_CASE("counts: completed, failed in any other way, and not started for the budget") {
  temp_dir dir;
  auto path = dir.path() / "r.jsonl";
  write_text(path, R"({"id":"a","terminal_reason":"completed"})"
                   "\n"
                   R"({"id":"b","terminal_reason":"max_turns"})"
                   "\n"
                   R"({"id":"c","error":"budget"})"
                   "\n"
                   R"({"id":"d","error":"invalid task: no \"prompt\""})"
                   "\n"
                   R"({"id":"a","terminal_reason":"error"})"
                   "\n");
  auto read = read_fleet_results(path);
  REQUIRE(read);
  auto counts = count_fleet_results(*read);
  CHECK(counts.completed == 0); // the last line for an id wins
  CHECK(counts.failed == 3);
  CHECK(counts.budget == 1);
  CHECK(counts.by_reason.at("max_turns") == 1);
  CHECK(counts.by_reason.at("error") == 1);
  CHECK(read_fleet_results(dir.path() / "none.jsonl")->by_id.empty());
  // A "budget" line never hides a result written before it (two fleets sharing a file).
  auto shared = dir.path() / "shared.jsonl";
  write_text(shared, R"({"id":"x","terminal_reason":"completed"})"
                     "\n"
                     R"({"id":"x","error":"budget"})"
                     "\n"
                     R"({"id":"y","error":"budget"})"
                     "\n"
                     R"({"id":"y","terminal_reason":"completed"})"
                     "\n");
  auto both = count_fleet_results(*read_fleet_results(shared));
  CHECK(both.completed == 2);
  CHECK(both.budget == 0);
}

TEST_CASE("a fleet's task session is found by its id and runs while the fleet's lock is held") {
  temp_dir dir;
  auto fleet = fleet_paths::of(dir.path(), "f1");
  auto task = fleet.task_session(task_session_id("f1", "a"));
  std::filesystem::create_directories(task.dir());
  // Only a folder that is a fleet's (it has fleet.json) makes its sessions fleet tasks: a troupe
  // home that sits in a folder named fleets/ is no fleet.
  CHECK_FALSE(fleet_of(task));
  write_text(fleet.info(), "{}");
  write_text(task.transcript(), "");
  session_info info;
  info.id = task.id();
  info.state = "running";
  auto info_file = json_file::open(task.info());
  REQUIRE(info_file);
  REQUIRE(info_file->write(nlohmann::json(info)));
  REQUIRE(fleet_of(task));
  CHECK(fleet_of(task)->id() == "f1");
  CHECK_FALSE(fleet_of(session_paths::top_level(dir.path(), "x")));

  session_catalog catalog{dir.path()};
  auto found = catalog.existing("f1-a");
  REQUIRE(found);
  CHECK(found->dir() == task.dir());
  CHECK_FALSE(session_running(task));
  {
    auto lock = session_lock::take(fleet);
    REQUIRE(lock);
    CHECK(session_running(task));
    CHECK(catalog.find("f1-a")->live);
    auto second = session_lock::take(fleet);
    REQUIRE_FALSE(second);
    CHECK(second.error().find("fleet f1 is running in another process") == 0);
  }
  CHECK_FALSE(session_running(task));
  CHECK(catalog.find("f1-a")->state_text() == "crashed");
  // troupe run --resume of the task holds the task's own lock: running too.
  auto own = session_lock::take(task);
  REQUIRE(own);
  CHECK(session_running(task));
}
