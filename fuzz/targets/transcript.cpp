// The transcript line reader (store/transcript): as a reader, and as the owner that repairs a
// torn last line; and the state file reader on the same bytes.

#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>

#include "store/state_files.hpp"
#include "store/transcript.hpp"
#include "fuzz/targets.hpp"

namespace troupe::fuzz {

namespace {

std::string whole_file(const char* path) {
  std::ifstream in{path, std::ios::binary};
  return {std::istreambuf_iterator<char>{in}, {}};
}

} // namespace

int transcript(const uint8_t* data, size_t size) {
  const char* path = scratch_file("transcript.jsonl");
  std::string torn = std::string{path} + ".torn";
  write_scratch(path, data, size);
  if (auto read = load_transcript(path, transcript_access::reader))
    for (auto& m : read->messages) {
      nlohmann::json j = m;
      j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
  ::unlink(torn.c_str());
  auto owned = load_transcript(path, transcript_access::owner);
  if (owned) {
    // What the owner repaired loads again the same, with nothing left to repair: the second
    // load changes no byte (a whole line cut short stays in place, skipped with a note).
    auto repaired = whole_file(path);
    auto again = load_transcript(path, transcript_access::owner);
    fuzz_check(static_cast<bool>(again), "a repaired transcript loads");
    fuzz_check(again->messages == owned->messages, "a repaired transcript keeps its messages");
    fuzz_check(whole_file(path) == repaired, "a repaired transcript needs no second repair");
  }
  ::unlink(torn.c_str());
  write_scratch(path, data, size);
  read_loop_state(path, 1); // once: nothing rewrites it
  return 0;
}

} // namespace troupe::fuzz
