#include <doctest/doctest.h>

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <thread>

#include "store/session_catalog.hpp"
#include "store/state_files.hpp"
#include "support/test_support.hpp"

using namespace troupe;
using namespace troupe::test;

TEST_CASE("the state file always holds exactly the last state written") {
  temp_dir dir;
  auto file = json_file::open(dir / "s/state.json");
  REQUIRE(file);
  loop_state big;
  big.messages_count = 123456789;
  big.total_steps = 987654321;
  big.transition = transition_reason::structural_stop;
  REQUIRE(file->write(big));
  CHECK(*read_loop_state(dir / "s/state.json") == big);
  auto big_size = std::filesystem::file_size(dir / "s/state.json");
  loop_state small; // shorter JSON: padded, so the old tail cannot survive as garbage
  small.turn_count = 4;
  REQUIRE(file->write(small));
  CHECK(*read_loop_state(dir / "s/state.json") == small);
  CHECK(std::filesystem::file_size(dir / "s/state.json") == big_size);
  CHECK(nlohmann::json::parse(read_file(dir / "s/state.json")).get<loop_state>() == small);
  // Reopening keeps the content until the next write.
  auto again = json_file::open(dir / "s/state.json");
  REQUIRE(again);
  CHECK(*read_loop_state(dir / "s/state.json") == small);
  CHECK_FALSE(read_loop_state(dir / "missing.json"));
}

TEST_CASE("a state file count past its range is an error (fuzz finding)") {
  // Found by fuzz/targets/transcript.cpp: 4.77778e+48 converted into an int64_t is undefined.
  temp_dir dir;
  auto path = dir / "state.json";
  write_file(path, R"({"messages_count":4.77778e+48,"turn_count":1,"step_count":2,"total_steps":2,
    "auto_compact":{"compacted":false,"turns_since_compact":0,"consecutive_failures":0},
    "max_output_recovery_count":0,"has_attempted_reactive_compact":false,
    "stop_hook_active":false,"transition_reason":"next_turn","todos":[]})");
  auto state = read_loop_state(path);
  REQUIRE_FALSE(state);
  CHECK(state.error().find("is not a loop state") != std::string::npos);
}

TEST_CASE("session.json reads back as written, and what is not a session's is an error") {
  temp_dir dir;
  auto path = dir / "s/session.json";
  auto file = json_file::open(path);
  REQUIRE(file);
  session_info info;
  info.id = "s";
  info.name = "fix the tests";
  info.turns = 3;
  info.cost_usd = 0.25;
  REQUIRE(file->write(info));
  auto back = read_session_info(path);
  REQUIRE(back);
  CHECK(back->name == "fix the tests");
  CHECK(back->turns == 3);
  CHECK(back->cost_usd == 0.25);
  write_file(path, "[1, 2]");
  auto array = read_session_info(path);
  REQUIRE_FALSE(array);
  CHECK(array.error().find("is not a JSON object") != std::string::npos);
  write_file(path, R"({"turns": "three"})");
  auto wrong = read_session_info(path);
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error().find("is not a session's") != std::string::npos);
  auto missing = read_session_info(dir / "none/session.json");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().find("no such file") != std::string::npos);
}

TEST_CASE("a file read torn while its writer rewrites it is read again") {
  temp_dir dir;
  auto path = dir / "session.json";
  write_file(path, R"({"name": "half)"); // what a reader racing a rewrite can see
  // The writer finishes only once the reader has read the torn text once (and closed it).
  int watch = ::inotify_init1(IN_CLOEXEC);
  REQUIRE(watch >= 0);
  REQUIRE(::inotify_add_watch(watch, path.c_str(), IN_CLOSE_NOWRITE) >= 0);
  std::thread writer{[&] {
    pollfd read_once{watch, POLLIN, 0};
    char event[sizeof(inotify_event) + 256];
    if (::poll(&read_once, 1, 5000) == 1 && ::read(watch, event, sizeof event) > 0)
      write_file(path, R"({"name": "whole"})");
  }};
  auto read = read_json_object(path, 2000); // up to 2 s for the writer: never a flaky race
  writer.join();
  ::close(watch);
  REQUIRE(read);
  CHECK((*read)["name"] == "whole");
}

TEST_CASE("a file that stays torn is an error after its last try") {
  temp_dir dir;
  auto path = dir / "state.json";
  write_file(path, R"({"turn_count": 4, "tot)");
  auto read = read_json_object(path);
  REQUIRE_FALSE(read);
  CHECK(read.error() == path.string() + " is not valid JSON");
  auto state = read_loop_state(path);
  REQUIRE_FALSE(state);
  CHECK(state.error().find("is not valid JSON") != std::string::npos);
}

namespace {

// How many times the watched file was opened for reading and closed since the watch began. The
// watch takes opens too: inotify merges an event into the one before it when they are the same,
// and an open between two closes keeps them apart.
int reads_of(int watch) {
  int reads = 0;
  alignas(inotify_event) char events[4096];
  for (;;) {
    auto n = ::read(watch, events, sizeof events);
    if (n <= 0)
      return reads;
    for (char* at = events; at < events + n;) {
      auto* event = reinterpret_cast<inotify_event*>(at);
      reads += (event->mask & IN_CLOSE_NOWRITE) != 0 ? 1 : 0;
      at += sizeof(inotify_event) + event->len;
    }
  }
}

} // namespace

TEST_CASE("ls reads a torn session.json again before it falls back to the transcript") {
  temp_dir home;
  auto session = session_paths::top_level(home.path(), "s");
  write_file(session.transcript(), "");
  write_file(session.info(), R"({"name": "half)");
  int watch = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  REQUIRE(watch >= 0);
  REQUIRE(::inotify_add_watch(watch, session.info().c_str(), IN_OPEN | IN_CLOSE_NOWRITE) >=
          0);
  auto read = read_session(session);
  CHECK(read.info.state == "unknown"); // told by the transcript: the file stayed torn
  // Every try read it: a writer's pwrite takes microseconds, a few tries 1 ms apart see it whole.
  CHECK(torn_read_tries >= 3);
  CHECK(reads_of(watch) == 1 /* the access check */ + torn_read_tries);
  ::close(watch);
  // Its owner, who alone writes its state, reads it once; anyone else reads it again.
  write_file(session.state(), R"({"turn_count": )");
  for (auto [access, reads] : {std::pair{transcript_access::owner, 1},
                               std::pair{transcript_access::reader, torn_read_tries}}) {
    int state_watch = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    REQUIRE(::inotify_add_watch(state_watch, session.state().c_str(),
                                IN_OPEN | IN_CLOSE_NOWRITE) >= 0);
    auto loaded = load_session(session, access);
    REQUIRE(loaded);
    CHECK_FALSE(loaded->state);
    CHECK(reads_of(state_watch) == reads);
    ::close(state_watch);
  }
}

TEST_CASE("a json_file not kept open holds no descriptor between writes, and writes the same") {
  temp_dir dir;
  auto open_descriptors = [] {
    size_t n = 0;
    for (auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
      (void)entry;
      ++n;
    }
    return n;
  };
  auto before = open_descriptors();
  auto file = json_file::open(dir / "state.json", false);
  REQUIRE(file);
  CHECK(open_descriptors() == before);
  REQUIRE(file->write(nlohmann::json{{"long", std::string(100, 'x')}}));
  REQUIRE(file->write(nlohmann::json{{"short", 1}}));
  CHECK(open_descriptors() == before);
  auto read = read_json_object(dir / "state.json");
  REQUIRE(read);
  CHECK(*read == nlohmann::json{{"short", 1}}); // padded over the longer one, still one object
  auto kept = json_file::open(dir / "kept.json");
  REQUIRE(kept);
  CHECK(open_descriptors() == before + 1);
}
