// What preparing one model request costs as the transcript grows, with a compact boundary 20
// messages from its end: the session's context view (snapshot and token projection) and the
// provider's request body, the work done before every model call. For contrast, the same body
// built from the whole transcript, as it would be without the boundary.
// Usage: bench_request_preparation [REPEATS] [ROUNDS]

#include <cstdlib>
#include <functional>

#include "bench_support.hpp"
#include "context/compaction.hpp"
#include "context/context_window.hpp"
#include "providers/provider.hpp"

using namespace troupe;
using troupe::bench::clock_type;
using troupe::bench::microseconds_per;

namespace {

// A realistic mix: a prompt, then steps of an assistant reply with a call and its result.
std::vector<message_ptr> make_log(size_t count) {
  std::vector<message_ptr> log;
  const std::string output(600, 'o');
  for (size_t i = 0; log.size() < count; ++i) {
    message m;
    m.id = "m" + std::to_string(log.size());
    switch (i % 3) {
      case 0:
        m.role = role::user;
        m.content = "Please look at file " + std::to_string(i) + " and fix what is broken.";
        break;
      case 1:
        m.role = role::assistant;
        m.content = "Reading it.";
        m.tool_calls.push_back({"call_" + m.id, "read", {{"path", "src/file.cpp"}},
                                call_format::native});
        break;
      default:
        m.role = role::tool;
        m.tool_name = "read";
        m.tool_call_id = "call_m" + std::to_string(log.size() - 1);
        m.content = output;
        break;
    }
    log.push_back(std::make_shared<const message>(std::move(m)));
  }
  return log;
}

} // namespace

int main(int argc, char** argv) {
  size_t repeats = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 200;
  int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  provider_config openai;
  openai.model = "gpt-4.1";
  openai.base_url = "http://127.0.0.1:1/v1";
  std::vector<tool_descriptor> tools = {{"read", "Read a file", {{"type", "object"}}}};
  const std::string system_prompt(4000, 's');

  std::printf("request preparation (context view + OpenAI body), boundary 20 messages from "
              "the end, median of %d rounds of %zu requests\n",
              rounds, repeats);
  for (size_t count : {100, 1000, 10000}) {
    auto log = make_log(count - 20);
    compaction_record record;
    record.summary = std::string(2000, 'S');
    log.push_back(std::make_shared<const message>(make_boundary(record)));
    for (auto& m : make_log(19))
      log.push_back(m);
    context_window window{context_budget{model_limits{200000, 32000}}};
    auto loaded = clock_type::now();
    for (auto& m : log)
      window.append(m);
    std::chrono::duration<double, std::milli> load_ms = clock_type::now() - loaded;

    std::vector<double> bounded, whole;
    size_t body_bytes = 0, whole_bytes = 0;
    for (int round = 0; round < rounds; ++round) {
      bounded.push_back(microseconds_per(repeats, [&] {
        model_request request{system_prompt, window.snapshot(), tools};
        if (window.over_threshold())
          std::abort(); // the benchmark's context is far below the threshold
        body_bytes = build_request(openai, request).body.size();
      }));
      whole.push_back(microseconds_per(std::max<size_t>(1, repeats / 10), [&] {
        model_request request{system_prompt, context_snapshot{log}, tools};
        whole_bytes = build_request(openai, request).body.size();
      }));
    }
    std::printf("  %6zu messages: %8.1f us/request (%zu messages sent, %zu-byte body; "
                "replaying the transcript on resume %.1f ms) | whole transcript %9.1f us "
                "(%zu bytes)\n",
                count, bench::median(bounded), window.size(), body_bytes, load_ms.count(),
                bench::median(whole), whole_bytes);
  }
  return 0;
}
