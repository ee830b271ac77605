// Feeds every file of fuzz/corpus/<target>/ to its target, for the regular (g++) build: the
// seed corpora stay exercised where libFuzzer is not available. Usage: fuzz_replay CORPUS_DIR.

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/targets.hpp"

namespace {

struct target {
  const char* name;
  int (*run)(const uint8_t*, size_t);
};

const target targets[] = {
  {"tool_calls", troupe::fuzz::tool_calls}, {"sse_openai", troupe::fuzz::sse_openai},
  {"sse_anthropic", troupe::fuzz::sse_anthropic}, {"transcript", troupe::fuzz::transcript},
  {"queue", troupe::fuzz::queue}, {"settings", troupe::fuzz::settings},
  {"glob", troupe::fuzz::glob},
};

} // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  namespace fs = std::filesystem;
  int failures = 0;
  for (auto& t : targets) {
    fs::path dir = fs::path{argv[1]} / t.name;
    std::vector<fs::path> files;
    std::error_code ec;
    for (fs::directory_iterator it{dir, ec}, end; !ec && it != end; it.increment(ec))
      if (it->is_regular_file())
        files.push_back(it->path());
    if (files.empty()) {
      std::fprintf(stderr, "%s: no seed inputs in %s\n", t.name, dir.c_str());
      ++failures;
      continue;
    }
    for (auto& file : files) {
      std::ifstream in{file, std::ios::binary};
      std::string bytes{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
      t.run(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    }
    std::printf("%s: %zu inputs\n", t.name, files.size());
  }
  return failures == 0 ? 0 : 1;
}
