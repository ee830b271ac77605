// The providers' wire formats: request bodies and stream decoding, without any HTTP.

#include <doctest/doctest.h>

#include "providers/provider.hpp"

using namespace troupe;
using nlohmann::json;

TEST_CASE("OpenAI tool-call deltas without an index still become separate calls") {
  auto decoder = make_stream_decoder(provider_kind::openai);
  std::string stream;
  for (auto chunk : {
         R"({"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"read","arguments":"{\"path\":"}}]}}]})",
         R"({"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"\"x\"}"}}]}}]})",
         R"({"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"shell","arguments":"{\"command\":\"ls\"}"}}]}}]})",
         R"({"choices":[{"delta":{},"finish_reason":"tool_calls"}]})"})
    stream += std::string{"data: "} + chunk + "\n\n";
  decoder->feed(stream + "data: [DONE]\n\n");
  auto reply = decoder->finish();
  REQUIRE(reply.ok());
  REQUIRE(reply.assistant.tool_calls.size() == 2);
  CHECK(reply.assistant.tool_calls[0].input == json{{"path", "x"}});
  CHECK(reply.assistant.tool_calls[1].name == "shell");
  CHECK(reply.stop_reason == "tool_use");
}

TEST_CASE("Anthropic requests never carry blank text or native tool blocks without tools") {
  provider_config config;
  config.kind = provider_kind::anthropic;
  config.format = tool_format::xml;
  model_request request;
  message user;
  user.role = role::user;
  user.content = "  ";
  message reply;
  reply.role = role::assistant;
  reply.content = "\n\n";
  reply.tool_calls = {{"t1", "shell", {{"command", "ls"}}, call_format::native}};
  auto result = make_tool_message(reply.tool_calls[0], tool_result{"out", false, 0, false});
  for (auto& m : {user, reply, result})
    request.context.messages.push_back(std::make_shared<const message>(m));
  auto body = json::parse(build_request(config, request).body);
  auto text = body["messages"].dump();
  CHECK(text.find("tool_use") == std::string::npos);
  CHECK(text.find("tool_result") == std::string::npos);
  CHECK(text.find("Result of shell") != std::string::npos);
  CHECK(text.find("\"\\n\\n\"") == std::string::npos);
  CHECK_FALSE(body.contains("tools"));
}
