// Read-only calls of one reply run at once: 10 grep calls and 10 read calls in one reply,
// with the parallel batch (up to 10 at once) against the same reply with one call at a time
// (max_parallel_tools = 1). Each is timed from the step that issues the calls to the next
// step, stamped inside the session.
//
// Usage: bench_parallel_tools [runs=5]

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include "actors/runtime.hpp"
#include "bench_support.hpp"

using namespace troupe;
using namespace troupe::bench;

namespace {

// A source-like tree: 200 files of 300 lines each (~3.5 MB), so one grep does real work.
void make_tree(const std::filesystem::path& work) {
  const char* words[] = {"alpha", "beta", "gamma", "delta", "parse", "render", "socket",
                         "buffer", "thread", "value", "index", "error", "status", "result"};
  unsigned seed = 7;
  for (int d = 0; d < 10; ++d)
    for (int f = 0; f < 20; ++f) {
      auto path = work / ("src/dir" + std::to_string(d)) / ("file" + std::to_string(f) + ".cpp");
      std::filesystem::create_directories(path.parent_path());
      std::ofstream out{path};
      for (int line = 0; line < 300; ++line) {
        out << "  auto ";
        for (int w = 0; w < 6; ++w) {
          seed = seed * 1103515245u + 12345u;
          out << words[(seed >> 16) % 14] << (w < 5 ? "_" : " = compute(");
        }
        out << line << ");\n";
      }
    }
}

std::vector<scripted_reply> reply_with(const std::vector<tool_call>& calls) {
  scripted_reply batch;
  batch.text = "looking";
  batch.tool_calls = calls;
  scripted_reply last;
  last.text = "done";
  return {batch, last};
}

double batch_ms(caf::actor_system& sys, const std::filesystem::path& root,
                const std::vector<tool_call>& calls, size_t parallel, int run) {
  auto t = run_scripted(sys, root / "home", root / "work", reply_with(calls),
                        "run-" + std::to_string(parallel) + "-" + std::to_string(run), parallel);
  return t.size() < 2 ? 0 : std::chrono::duration<double, std::milli>(t[1] - t[0]).count();
}

} // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 5;
  caf::actor_system_config cfg;
  configure_actor_system(cfg);
  caf::actor_system sys{cfg};
  char root_template[] = "/tmp/troupe-bench-XXXXXX";
  std::filesystem::path root = mkdtemp(root_template);
  make_tree(root / "work");

  const char* patterns[] = {"alpha_beta", "gamma_delta", "parse_render", "socket_buffer",
                            "thread_value", "index_error", "status_result", "compute\\(29\\d\\)",
                            "beta_gamma_delta", "value = "};
  std::vector<tool_call> greps, reads;
  for (int i = 0; i < 10; ++i) {
    greps.push_back({"", "grep", {{"pattern", patterns[i]}, {"output_mode", "count"}},
                     call_format::native});
    reads.push_back({"", "read",
                     {{"path", "src/dir" + std::to_string(i) + "/file" + std::to_string(i) + ".cpp"}},
                     call_format::native});
  }
  std::printf("10 read-only calls in one reply, median of %d runs (%u cores)\n", runs,
              std::thread::hardware_concurrency());
  for (auto& [name, calls] : {std::pair{"grep (each over 3.5 MB)", greps},
                              std::pair{"read (a 300-line file each)", reads}}) {
    std::vector<double> parallel, sequential;
    for (int run = 0; run < runs; ++run) {
      parallel.push_back(batch_ms(sys, root, calls, 10, run));
      sequential.push_back(batch_ms(sys, root, calls, 1, run));
    }
    std::printf("  %-30s parallel %8.2f ms, one at a time %8.2f ms, speed-up %.2fx\n", name,
                median(parallel), median(sequential), median(sequential) / median(parallel));
  }
  std::filesystem::remove_all(root);
  return 0;
}
