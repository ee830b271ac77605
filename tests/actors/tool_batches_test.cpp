// How the calls of one reply run: consecutive read-only calls together (at most 10), anything
// else alone and in order, every result logged in call order.

#include <doctest/doctest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "support/agent_fixture.hpp"

using namespace troupe;
using namespace troupe::test;
using nlohmann::json;

namespace {

// Calls in flight across probe tools. A probe waits (up to 5 s) until `wait_for` probes run at
// once, then reports how many it saw: the count proves what overlapped, without timing.
struct flight {
  std::mutex mutex;
  std::condition_variable changed;
  int in_flight = 0;
  int peak = 0;          // the most in flight since it last dropped to none
  bool released = false; // lets waiting probes go at the end of a test
};

tool_spec probe(const std::string& name, bool read_only, std::shared_ptr<flight> shared) {
  tool_spec spec;
  spec.name = name;
  spec.description = "test probe";
  spec.input_schema = {{"type", "object"},
                       {"properties",
                        {{"label", {{"type", "string"}}},
                         {"wait_for", {{"type", "integer"}}},
                         {"linger_ms", {{"type", "integer"}}},
                         {"patience_ms", {{"type", "integer"}}}}}};
  spec.read_only = read_only;
  spec.kind = read_only ? tool_kind::scan : tool_kind::function;
  spec.run = [shared](const json& input, const tool_context&) {
    std::unique_lock<std::mutex> lock{shared->mutex};
    shared->peak = std::max(shared->peak, ++shared->in_flight);
    shared->changed.notify_all();
    int wanted = input.value("wait_for", 1);
    shared->changed.wait_for(lock, std::chrono::milliseconds(input.value("patience_ms", 5000)),
                             [&] { return shared->peak >= wanted || shared->released; });
    int seen = shared->peak;
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(input.value("linger_ms", 0)));
    lock.lock();
    if (--shared->in_flight == 0)
      shared->peak = 0;
    tool_result result;
    result.output = input.value("label", std::string{}) + " saw " + std::to_string(seen);
    return result;
  };
  return spec;
}

json calls_reply(const std::vector<std::pair<std::string, json>>& calls) {
  auto list = json::array();
  for (auto& [tool, input] : calls)
    list.push_back({{"name", tool}, {"input", input}});
  return {{"text", ""}, {"tool_calls", list}};
}

std::vector<std::string> tool_outputs(agent_fixture& f) {
  std::vector<std::string> out;
  for (auto& m : f.transcript())
    if (m["role"] == "tool")
      out.push_back(m["content"].get<std::string>());
  return out;
}

} // namespace

TEST_CASE("read-only calls run together, others alone, results in call order") {
  agent_fixture f;
  auto shared = std::make_shared<flight>();
  f.config.registry = std::make_shared<const tool_registry>(
    std::vector<tool_spec>{probe("look", true, shared), probe("change", false, shared)});
  auto ended = f.run({calls_reply({
                        // a finishes last (it lingers), yet is logged first
                        {"look", {{"label", "a"}, {"wait_for", 2}, {"linger_ms", 200}}},
                        {"look", {{"label", "b"}, {"wait_for", 2}}},
                        {"change", {{"label", "c"}}},
                        {"look", {{"label", "d"}}},
                      }),
                      text_reply("done")});
  CHECK(ended.reason == terminal_reason::completed);
  CHECK(tool_outputs(f) == std::vector<std::string>{"a saw 2", "b saw 2", "c saw 1", "d saw 1"});
}

TEST_CASE("at most ten calls run at once") {
  agent_fixture f;
  auto shared = std::make_shared<flight>();
  f.config.registry =
    std::make_shared<const tool_registry>(std::vector<tool_spec>{probe("look", true, shared)});
  std::vector<std::pair<std::string, json>> calls;
  for (int i = 0; i < 12; ++i)
    calls.push_back({"look", {{"label", std::to_string(i)}, {"wait_for", i < 10 ? 10 : 2}}});
  f.run({calls_reply(calls), text_reply("done")});
  auto outputs = tool_outputs(f);
  REQUIRE(outputs.size() == 12);
  for (int i = 0; i < 12; ++i)
    CHECK(outputs[static_cast<size_t>(i)] == std::to_string(i) + (i < 10 ? " saw 10" : " saw 2"));
}

TEST_CASE("an interrupt answers read-only calls still running at once") {
  agent_fixture f;
  auto shared = std::make_shared<flight>();
  f.config.registry =
    std::make_shared<const tool_registry>(std::vector<tool_spec>{probe("look", true, shared)});
  // wait_for 3 with two calls: each waits its full 5 s unless the interrupt answers them.
  auto session = f.start({calls_reply({{"look", {{"label", "a"}, {"wait_for", 3}}},
                                       {"look", {{"label", "b"}, {"wait_for", 3}}}})},
                         {"go"});
  REQUIRE(wait_until([&] {
    std::lock_guard<std::mutex> lock{shared->mutex};
    return shared->in_flight == 2;
  }));
  auto asked = std::chrono::steady_clock::now();
  caf::anon_send(session, interrupt_atom::value);
  auto ended = f.events->wait_for_end();
  CHECK(std::chrono::steady_clock::now() - asked < std::chrono::seconds(3));
  CHECK(ended.reason == terminal_reason::interrupted);
  auto log = f.transcript();
  REQUIRE(log.size() >= 4);
  CHECK(log[2]["content"] == "[interrupted before the call finished]");
  CHECK(log[3]["content"] == "[interrupted before the call finished]");
  std::lock_guard<std::mutex> lock{shared->mutex};
  shared->released = true;
  shared->changed.notify_all();
}

TEST_CASE("max_parallel_tools 1 runs every call in turn") {
  agent_fixture f;
  auto shared = std::make_shared<flight>();
  f.config.max_parallel_tools = 1;
  f.config.registry =
    std::make_shared<const tool_registry>(std::vector<tool_spec>{probe("look", true, shared)});
  f.run({calls_reply({{"look", {{"label", "a"}, {"wait_for", 2}, {"patience_ms", 200}}},
                      {"look", {{"label", "b"}, {"wait_for", 2}, {"patience_ms", 200}}}}),
         text_reply("done")});
  CHECK(tool_outputs(f) == std::vector<std::string>{"a saw 1", "b saw 1"});
}
