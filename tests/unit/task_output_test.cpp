// What task_output reads of a task's log: all of a small one, the head and tail of a large one,
// whatever its size, in two bounded reads.

#include <doctest/doctest.h>

#include "support/test_support.hpp"
#include "tools/task_output.hpp"

using namespace troupe;
using namespace troupe::test;

TEST_CASE("log_excerpt reads a small log whole and a missing one as empty") {
  temp_dir dir;
  write_file(dir / "task.log", "first\nsecond\n");
  CHECK(log_excerpt(dir / "task.log", 1000) == "first\nsecond\n");
  CHECK(log_excerpt(dir / "nothing.log", 1000).empty());
}

TEST_CASE("log_excerpt keeps the head and tail of a large log, cut between characters") {
  temp_dir dir;
  // 3-byte characters, so that both cuts fall inside one.
  std::string log = "HEAD\n";
  for (int i = 0; i < 100000; ++i)
    log += "€";
  log += "\nTAIL\n";
  write_file(dir / "task.log", log);
  auto excerpt = log_excerpt(dir / "task.log", 1001);
  CHECK(excerpt.rfind("HEAD\n", 0) == 0);
  CHECK(excerpt.substr(excerpt.size() - 6) == "\nTAIL\n");
  CHECK(excerpt.size() < 1200);
  CHECK(excerpt.find(std::to_string(log.size()) + " bytes in all, in " +
                     (dir / "task.log").string()) != std::string::npos);
  // Only whole characters on either side of the note.
  auto note = excerpt.find("\n[... ");
  REQUIRE(note != std::string::npos);
  auto head = excerpt.substr(5, note - 5);
  auto tail = excerpt.substr(excerpt.find("...]\n") + 5);
  tail = tail.substr(0, tail.size() - 6);
  CHECK(head.size() % 3 == 0);
  CHECK(tail.size() % 3 == 0);
  CHECK(head.find_first_not_of("€") == std::string::npos);
  CHECK(tail.find_first_not_of("€") == std::string::npos);
}
