// The durable notification queue, the notification text and the task tool's block form.

#include <doctest/doctest.h>

#include <fstream>
#include <thread>

#include "store/notification_queue.hpp"
#include "support/test_support.hpp"
#include "tools/task.hpp"

using namespace troupe;
using namespace troupe::test;

namespace {

task_notification entry(const std::string& id) {
  task_notification n;
  n.id = id;
  n.source = "external";
  n.text = "text of " + id;
  return n;
}

} // namespace

TEST_CASE("the queue appends whole lines and reads what is new from an offset") {
  temp_dir dir;
  auto queue = dir / "queue.jsonl";
  size_t offset = 0;
  CHECK(read_notifications(queue, offset)->empty()); // a missing file is an empty queue
  REQUIRE(append_notification(queue, entry("a")));
  REQUIRE(append_notification(queue, entry("b")));
  auto first = read_notifications(queue, offset);
  REQUIRE(first->size() == 2);
  CHECK((*first)[1].id == "b");
  CHECK((*first)[1].text == "text of b");
  REQUIRE(append_notification(queue, entry("c")));
  auto second = read_notifications(queue, offset);
  REQUIRE(second->size() == 1);
  CHECK((*second)[0].id == "c");
}

TEST_CASE("a half-written last line is left for the next read, bad lines are counted") {
  temp_dir dir;
  auto queue = dir / "queue.jsonl";
  write_file(queue, "not json\n{\"id\":\"x\",\"text\":\"t\"}\n{\"id\":\"y\"");
  size_t offset = 0;
  size_t bad = 0;
  auto read = read_notifications(queue, offset, &bad);
  REQUIRE(read->size() == 1);
  CHECK((*read)[0].id == "x");
  CHECK(bad == 1);
  CHECK(offset == read_file(queue).rfind('\n') + 1);
}

TEST_CASE("the cap refuses an append and keeps everything") {
  temp_dir dir;
  auto queue = dir / "queue.jsonl";
  for (int i = 0; i < 3; ++i)
    REQUIRE(append_notification(queue, entry(std::to_string(i)), 3));
  auto refused = append_notification(queue, entry("3"), 3);
  REQUIRE(!refused);
  CHECK(refused.error().find("is full (3 undelivered entries)") != std::string::npos);
  CHECK(read_jsonl(queue).size() == 3);
}

TEST_CASE("release drops delivered entries and keeps the undelivered and the unread") {
  temp_dir dir;
  auto queue = dir / "queue.jsonl";
  for (auto id : {"a", "b", "c"})
    REQUIRE(append_notification(queue, entry(id)));
  size_t offset = 0;
  read_notifications(queue, offset);
  REQUIRE(append_notification(queue, entry("d"))); // not read yet
  release_notifications(queue, offset, {"b"});     // a and c are delivered
  auto left = read_jsonl(queue);
  REQUIRE(left.size() == 2);
  CHECK(left[0]["id"] == "b");
  CHECK(left[1]["id"] == "d");
  auto unread = read_notifications(queue, offset);
  REQUIRE(unread->size() == 1);
  CHECK((*unread)[0].id == "d");
}

TEST_CASE("release never rewrites the queue in place: a crash mid-way leaves one whole file") {
  // Moving unread lines forward inside the file cuts them when the process dies between two
  // writes; a new file renamed over the queue is, at every moment, the old file or the new one.
  temp_dir dir;
  auto queue = dir / "queue.jsonl";
  for (auto id : {"a", "b"})
    REQUIRE(append_notification(queue, entry(id)));
  size_t offset = 0;
  read_notifications(queue, offset);
  auto unread = entry("u");
  unread.text = std::string(200000, 'x'); // more than one chunk of the copy
  REQUIRE(append_notification(queue, unread));
  auto before = read_file(queue);
  std::ifstream old_file{queue, std::ios::binary}; // the file as it was, by its descriptor
  release_notifications(queue, offset, {"b"});
  std::string old_bytes{std::istreambuf_iterator<char>{old_file}, {}};
  CHECK(old_bytes == before);
  auto left = read_jsonl(queue);
  REQUIRE(left.size() == 2);
  CHECK(left[0]["id"] == "b");
  CHECK(left[1]["text"] == unread.text);
  // A writer that locked the replaced file finds the new one: nothing is appended to a ghost.
  REQUIRE(append_notification(queue, entry("e")));
  CHECK(read_jsonl(queue).size() == 3);
  CHECK(std::filesystem::directory_iterator(dir.path()) != std::filesystem::directory_iterator{});
  for (auto& f : std::filesystem::directory_iterator(dir.path()))
    CHECK(f.path().filename().string().find(".compact.") == std::string::npos);
}

TEST_CASE("concurrent writers never interleave their lines") {
  temp_dir dir;
  auto queue = dir / "queue.jsonl";
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w)
    writers.emplace_back([&, w] {
      for (int i = 0; i < 25; ++i)
        REQUIRE(append_notification(queue, entry(std::to_string(w) + "-" + std::to_string(i))));
    });
  for (auto& t : writers)
    t.join();
  CHECK(read_jsonl(queue).size() == 100);
}

TEST_CASE("an append that fails part-way leaves the queue as it was and names the cause") {
  temp_dir dir;
  auto queue = dir / "queue.jsonl";
  REQUIRE(append_notification(queue, entry("before")));
  auto content = read_file(queue);
  auto big = entry("lost");
  big.text = std::string(20000, 'x');
  expected<bool> failed = true;
  {
    file_size_limit full{content.size() + 4096}; // room for a part of the line only
    failed = append_notification(queue, big);
  }
  REQUIRE(!failed);
  CHECK(failed.error().find("File too large") != std::string::npos);
  CHECK(failed.error().find("Success") == std::string::npos);
  CHECK(failed.error().find("nothing was added") != std::string::npos);
  CHECK(read_file(queue) == content); // the part written is taken back
  // The next notification is a line of its own, delivered after the one before.
  REQUIRE(append_notification(queue, entry("after")));
  size_t offset = 0;
  size_t bad = 0;
  auto read = read_notifications(queue, offset, &bad);
  REQUIRE(read);
  REQUIRE(read->size() == 2);
  CHECK((*read)[0].id == "before");
  CHECK((*read)[1].id == "after");
  CHECK(bad == 0);
}

TEST_CASE("a torn last line never swallows the next entry, and its bytes are set aside") {
  temp_dir dir;
  auto queue = dir / "queue.jsonl";
  REQUIRE(append_notification(queue, entry("a")));
  auto torn = std::string{R"({"id":"torn","source":"external","text":"half a)"};
  write_file(queue, read_file(queue) + torn); // a writer killed mid-write
  size_t offset = 0;
  size_t bad = 0;
  auto first = read_notifications(queue, offset, &bad);
  REQUIRE(first->size() == 1); // the torn tail is not read yet
  REQUIRE(append_notification(queue, entry("b")));
  auto second = read_notifications(queue, offset, &bad);
  REQUIRE(second);
  REQUIRE(second->size() == 1);
  CHECK((*second)[0].id == "b");
  CHECK(bad == 1);
  CHECK(read_file(set_aside_path(queue)) == torn + "\n");
  // Releasing what was delivered drops the torn line from the queue; its bytes stay aside.
  release_notifications(queue, offset, {});
  CHECK(read_file(queue).empty());
  CHECK(read_file(set_aside_path(queue)) == torn + "\n");
}

TEST_CASE("a bad line that cannot be set aside stays in the queue, and what came before is delivered") {
  temp_dir dir;
  auto queue = dir / "queue.jsonl";
  REQUIRE(append_notification(queue, entry("a")));
  write_file(queue, read_file(queue) + "garbage\n");
  REQUIRE(append_notification(queue, entry("b")));
  std::filesystem::create_directories(set_aside_path(queue)); // cannot be written
  size_t offset = 0;
  size_t bad = 0;
  std::string problem;
  auto first = read_notifications(queue, offset, &bad, queue_line_limit(1024), &problem);
  REQUIRE(first);
  REQUIRE(first->size() == 1);
  CHECK((*first)[0].id == "a");
  CHECK(problem.find("cannot set aside") != std::string::npos);
  release_notifications(queue, offset, {}); // a is delivered
  CHECK(read_file(queue).find("garbage\n") == 0);
  std::filesystem::remove(set_aside_path(queue));
  problem.clear();
  auto second = read_notifications(queue, offset, &bad, queue_line_limit(1024), &problem);
  REQUIRE(second);
  REQUIRE(second->size() == 1);
  CHECK((*second)[0].id == "b");
  CHECK(problem.empty());
  CHECK(read_file(set_aside_path(queue)) == "garbage\n");
}

TEST_CASE("an oversized line is streamed past and set aside in bounded memory") {
  temp_dir dir;
  auto queue = dir / "queue.jsonl";
  REQUIRE(append_notification(queue, entry("a")));
  auto before_big = std::filesystem::file_size(queue);
  constexpr size_t big_text = 64u << 20;
  {
    // Written in pieces: the test itself must not hold it.
    std::ofstream out{queue, std::ios::binary | std::ios::app};
    out << R"({"id":"big","source":"external","text":")";
    std::string piece(1u << 20, 'y');
    for (size_t i = 0; i < big_text / piece.size(); ++i)
      out << piece;
    out << "\"}\n";
  }
  auto big_line = std::filesystem::file_size(queue) - before_big;
  REQUIRE(append_notification(queue, entry("c")));
  size_t offset = 0;
  size_t bad = 0;
  reset_peak_rss();
  auto base = peak_rss();
  auto read = read_notifications(queue, offset, &bad, queue_line_limit(65536));
  release_notifications(queue, offset, {}, queue_line_limit(65536));
  auto grown = peak_rss() > base ? peak_rss() - base : 0;
  REQUIRE(read);
  REQUIRE(read->size() == 2);
  CHECK((*read)[0].id == "a");
  CHECK((*read)[1].id == "c");
  CHECK(bad == 1);
  CHECK(std::filesystem::file_size(set_aside_path(queue)) == big_line);
  CHECK(read_file(queue).empty());
  MESSAGE("peak memory grew by " << grown / 1024 << " KiB reading a " << big_line / 1024
                                 << " KiB line");
  CHECK(grown < (16u << 20)); // far less than the line
}

TEST_CASE("notification text names the source, the task and its result") {
  task_notification n;
  n.source = "agent";
  n.task_id = "agent_1";
  n.status = "failed";
  n.description = "run tests";
  n.text = "3 tests failed";
  n.usage.input_tokens = 10;
  n.usage.output_tokens = 5;
  auto text = notification_text(n);
  CHECK(text.find("<agent-id>agent_1</agent-id>") != std::string::npos);
  CHECK(text.find("<status>failed</status>") != std::string::npos);
  CHECK(text.find("<description>run tests</description>") != std::string::npos);
  CHECK(text.find("3 tests failed") != std::string::npos);
  CHECK(text.find("input_tokens: 10") != std::string::npos);
  n.source = "external";
  CHECK(notification_text(n).find("<source>external</source>") != std::string::npos);
}

TEST_CASE("a ```task block is a task call: the fence's word is the mode") {
  auto spec = task_tool();
  auto input = spec.input_from_block("background", "Find every caller of parse().\nList them.");
  CHECK(input["mode"] == "background");
  CHECK(input["prompt"] == "Find every caller of parse().\nList them.");
  CHECK(input["description"] == "Find every caller of parse().");
  CHECK(!spec.input_from_block("", "x").contains("mode"));
  CHECK(validate_input(spec, input) == std::nullopt);
  CHECK(validate_input(spec, {{"mode", "background"}}).has_value()); // no prompt
}

TEST_CASE("a task block's fence names the mode, a model and an agent to resume") {
  auto spec = task_tool();
  auto input = spec.input_from_block("background model=scripted:child.jsonl max_steps=4",
                                     "Write the tests.");
  CHECK(input["mode"] == "background");
  CHECK(input["model"] == "scripted:child.jsonl");
  CHECK(input["max_steps"] == 4);
  CHECK(validate_input(spec, input) == std::nullopt);
  CHECK(spec.input_from_block("resume=agent_1a2b3c", "go on")["resume"] == "agent_1a2b3c");
  auto unknown = spec.input_from_block("colour=blue", "x");
  REQUIRE(validate_input(spec, unknown).has_value());
  CHECK(validate_input(spec, unknown)->find("no argument 'colour'") != std::string::npos);
}

TEST_CASE("a mode outside the schema's choices is refused with the choices") {
  auto spec = task_tool();
  auto problem = validate_input(spec, {{"prompt", "p"}, {"mode", "bogus"}});
  REQUIRE(problem.has_value());
  CHECK(problem->find("must be one of \"foreground\", \"background\"") != std::string::npos);
}

TEST_CASE("a queue entry whose numbers do not fit is a bad line (fuzz finding)") {
  // Found by fuzz/targets/queue.cpp: a float past int64_t's range converted with undefined
  // behaviour (sent_at_us, and the usage counts).
  temp_dir dir;
  auto queue = dir / "queue.jsonl";
  write_file(queue, R"({"id":"n_1","text":"a","sent_at_us":1.76464e+20})" "\n"
                    R"({"id":"n_2","text":"b","usage":{"input_tokens":-1e300}})" "\n");
  REQUIRE(append_notification(queue, entry("n_3")));
  size_t offset = 0;
  size_t bad = 0;
  auto read = read_notifications(queue, offset, &bad);
  REQUIRE(read);
  REQUIRE(read->size() == 1);
  CHECK(read->at(0).id == "n_3");
  CHECK(bad == 2);
}

TEST_CASE("releasing read entries survives an id that is not a string (fuzz finding)") {
  // Found by fuzz/targets/queue.cpp: release_notifications read "id" as a string and threw
  // (std::terminate in the session) for {"id": 5}.
  temp_dir dir;
  auto queue = dir / "queue.jsonl";
  write_file(queue, "{\"id\": 5, \"text\": \"x\"}\n");
  REQUIRE(append_notification(queue, entry("n_2")));
  size_t offset = 0;
  auto read = read_notifications(queue, offset);
  REQUIRE(read);
  CHECK_NOTHROW(release_notifications(queue, offset, {"n_2"}));
  CHECK(read_file(queue).find("\"id\":\"n_2\"") != std::string::npos);
  CHECK(read_file(queue).find("\"id\": 5") == std::string::npos);
}
