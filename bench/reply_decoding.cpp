// What decoding one streamed model reply costs: a tool call (`printf 'step K\n'`) streamed as the
// providers stream it, argument text in 3-8 character pieces, one SSE event per piece, fed to
// the decoder an event at a time, as a server with no latency delivers it. Every reply a
// session receives goes through this on the step's path.
// Usage: bench_reply_decoding [REPEATS] [ROUNDS]

#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "bench_support.hpp"
#include "providers/json_text.hpp"
#include "providers/provider.hpp"

using namespace troupe;

namespace {

const std::string arguments = R"({"command": "printf 'step 7\\n'"})";

std::vector<std::string> pieces_of(const std::string& text) {
  std::vector<std::string> pieces;
  for (size_t at = 0, k = 0; at < text.size(); at += 3 + k % 6, ++k)
    pieces.push_back(text.substr(at, 3 + k % 6));
  return pieces;
}

std::string as_json(const std::string& text) {
  std::string out;
  append_json_string(out, text);
  return out;
}

std::vector<std::string> openai_stream() {
  const std::string head = R"(data: {"id":"chatcmpl-8f3a","object":"chat.completion.chunk",)"
                           R"("created":1796440110,"model":"gpt-4.1","system_fingerprint":null,)"
                           R"("choices":[{"index":0,"delta":)";
  const std::string tail = R"(,"logprobs":null,"finish_reason":null}],"usage":null})"
                           "\n\n";
  std::vector<std::string> events = {
    head + R"({"role":"assistant","content":"","refusal":null})" + tail,
    head + R"({"tool_calls":[{"index":0,"id":"call_8f3a0","type":"function",)"
           R"("function":{"name":"shell","arguments":""}}]})" +
      tail};
  for (auto& piece : pieces_of(arguments))
    events.push_back(head + R"({"tool_calls":[{"index":0,"function":{"arguments":)" +
                     as_json(piece) + "}}]}" + tail);
  events.push_back(head + R"({},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null})"
                          "\n\n");
  events.push_back(R"(data: {"id":"chatcmpl-8f3a","object":"chat.completion.chunk",)"
                   R"("created":1796440110,"model":"gpt-4.1","system_fingerprint":null,)"
                   R"("choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":20,)"
                   R"("total_tokens":1220,"prompt_tokens_details":{"cached_tokens":1024},)"
                   R"("completion_tokens_details":{"reasoning_tokens":0}}})"
                   "\n\n");
  events.push_back("data: [DONE]\n\n");
  return events;
}

std::vector<std::string> anthropic_stream() {
  auto event = [](const std::string& name, const std::string& data) {
    return "event: " + name + "\ndata: " + data + "\n\n";
  };
  std::vector<std::string> events = {
    event("message_start",
          R"({"type":"message_start","message":{"id":"msg_8f3a","type":"message",)"
          R"("role":"assistant","model":"claude-sonnet-4","content":[],"stop_reason":null,)"
          R"("stop_sequence":null,"usage":{"input_tokens":176,"cache_creation_input_tokens":0,)"
          R"("cache_read_input_tokens":1024,"output_tokens":1}}})"),
    event("content_block_start",
          R"({"type":"content_block_start","index":0,"content_block":{"type":"tool_use",)"
          R"("id":"toolu_8f3a0","name":"shell","input":{}}})"),
    event("ping", R"({"type":"ping"})")};
  for (auto& piece : pieces_of(arguments))
    events.push_back(event("content_block_delta",
                           R"({"type":"content_block_delta","index":0,"delta":)"
                           R"({"type":"input_json_delta","partial_json":)" +
                             as_json(piece) + "}}"));
  events.push_back(event("content_block_stop", R"({"type":"content_block_stop","index":0})"));
  events.push_back(event("message_delta",
                         R"({"type":"message_delta","delta":{"stop_reason":"tool_use",)"
                         R"("stop_sequence":null},"usage":{"output_tokens":20}})"));
  events.push_back(event("message_stop", R"({"type":"message_stop"})"));
  return events;
}

// Microseconds per reply; every reply is checked (the call decoded whole).
double decode(provider_kind kind, const std::vector<std::string>& events, size_t repeats) {
  return bench::microseconds_per(repeats, [&] {
    auto decoder = make_stream_decoder(kind);
    for (auto& e : events)
      decoder->feed(e);
    auto reply = decoder->finish();
    if (!reply.ok() || reply.assistant.tool_calls.size() != 1 ||
        reply.assistant.tool_calls[0].input.value("command", "") != "printf 'step 7\\n'") {
      std::fprintf(stderr, "the reply was not decoded whole\n");
      std::exit(1);
    }
  });
}

} // namespace

int main(int argc, char** argv) {
  size_t repeats = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 20000;
  int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  std::printf("decoding one streamed reply (a tool call), median of %d rounds of %zu\n", rounds,
              repeats);
  for (auto [kind, name, events] :
       {std::tuple{provider_kind::openai, "OpenAI", openai_stream()},
        std::tuple{provider_kind::anthropic, "Anthropic", anthropic_stream()}}) {
    size_t bytes = 0;
    for (auto& e : events)
      bytes += e.size();
    std::vector<double> runs;
    for (int round = 0; round < rounds; ++round)
      runs.push_back(decode(kind, events, repeats));
    std::printf("  %-9s %2zu events, %4zu bytes: %6.1f us per reply\n", name, events.size(),
                bytes, bench::median(runs));
  }
  return 0;
}
