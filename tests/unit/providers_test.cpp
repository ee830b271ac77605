// The providers' wire formats: request bodies and stream decoding, without any HTTP.

#include <doctest/doctest.h>

#include "providers/formats.hpp"
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

TEST_CASE("OpenAI arguments that were no JSON object go back as the model wrote them") {
  provider_config config;
  config.kind = provider_kind::openai;
  config.format = tool_format::tool;
  model_request request;
  request.tools = shared_value<std::vector<tool_descriptor>>{std::vector<tool_descriptor>{
    {"shell", "runs a command", nlohmann::json{{"type", "object"}}}}};
  message user;
  user.role = role::user;
  user.content = "go";
  const std::string cut = R"({"command": "ls)";
  const std::string listed = R"(["a", "b"])";
  message reply;
  reply.role = role::assistant;
  reply.tool_calls = {{"c1", "shell", detail::parse_arguments(cut), call_format::native},
                      {"c2", "shell", detail::parse_arguments(listed), call_format::native},
                      {"c3", "shell", detail::parse_arguments(R"({"command": "ls"})"), call_format::native}};
  request.context.messages.push_back(std::make_shared<const message>(user));
  request.context.messages.push_back(std::make_shared<const message>(reply));
  for (auto& call : reply.tool_calls)
    request.context.messages.push_back(std::make_shared<const message>(
      make_tool_message(call, tool_result{"bad input", true, 0, false})));
  auto body = json::parse(build_request(config, request).body);
  json calls;
  for (auto& m : body["messages"])
    if (m.contains("tool_calls"))
      calls = m["tool_calls"];
  REQUIRE(calls.size() == 3);
  CHECK(calls[0]["function"]["arguments"] == cut);
  CHECK(calls[1]["function"]["arguments"] == listed);
  CHECK(json::parse(calls[2]["function"]["arguments"].get<std::string>()) ==
        json{{"command", "ls"}});
}

TEST_CASE("a tool result as text names a command's exit code, never one that did not run") {
  message ran;
  ran.role = role::tool;
  ran.tool_name = "shell";
  ran.exit_code = 2;
  ran.is_error = true;
  ran.content = "no such file";
  CHECK(detail::tool_result_as_text(ran) == "Result of shell (exit code 2) [error]:\nno such file");
  auto never = ran;
  never.exit_code = -1; // bad arguments: no command ran
  never.content = "tool 'shell' needs the argument 'command'";
  CHECK(detail::tool_result_as_text(never) ==
        "Result of shell [error]:\ntool 'shell' needs the argument 'command'");
}

namespace {

// A whole streamed reply in the provider's wire format whose text is `text`.
std::string stream_of(provider_kind kind, const std::string& text) {
  auto quoted = json(text).dump();
  if (kind == provider_kind::openai)
    return "data: {\"choices\":[{\"delta\":{\"content\":" + quoted + "}}]}\n\n" +
           "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
  return "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{}}}\n\n"
         "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
         "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
         "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
         "\"delta\":{\"type\":\"text_delta\",\"text\":" +
         quoted +
         "}}\n\n"
         "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
         "\"end_turn\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
}

} // namespace

TEST_CASE("a stream decoder is complete at its closing event, not before, and never once failed") {
  for (auto kind : {provider_kind::openai, provider_kind::anthropic}) {
    CAPTURE(to_string(kind));
    auto whole = stream_of(kind, "hello");
    auto closing = whole.rfind("data: ");
    closing = whole.rfind("\n\n", closing) + 2; // where the closing event's frame begins
    auto decoder = make_stream_decoder(kind);
    decoder->feed(whole.substr(0, closing));
    CHECK_FALSE(decoder->complete()); // the stop reason alone is not the end of the stream
    decoder->feed(whole.substr(closing, whole.size() - closing - 1));
    CHECK_FALSE(decoder->complete()); // the closing event's frame not yet ended
    decoder->feed("\n");
    CHECK(decoder->complete());
    auto reply = decoder->finish();
    REQUIRE(reply.ok());
    CHECK(reply.assistant.content == "hello");

    // Nothing after the closing event is read, in the same read or a later one.
    auto trailed = make_stream_decoder(kind);
    trailed->feed(whole + "data: {not json\n\n");
    trailed->feed("data: {\"type\": \"error\", \"error\": {}}\n\n");
    CHECK(trailed->complete());
    auto kept = trailed->finish();
    REQUIRE(kept.ok());
    CHECK(kept.assistant.content == "hello");

    // Nor is what comes later: not even an event past the cap.
    auto late = make_stream_decoder(kind, 4096);
    late->feed(whole);
    late->feed("data: " + std::string(5000, 'x') + "\n\n");
    CHECK_FALSE(late->failed());
    CHECK(late->complete());

    // An event past the cap in the same read fails it all the same (the parser has read the
    // whole buffer): a failed reply is never complete.
    auto capped = make_stream_decoder(kind, 4096);
    capped->feed(whole + "data: " + std::string(5000, 'x') + "\n\n");
    CHECK(capped->failed());
    CHECK_FALSE(capped->complete());
  }
}

TEST_CASE("both stream decoders accept events up to the cap and fail clearly past it") {
  for (auto kind : {provider_kind::openai, provider_kind::anthropic}) {
    CAPTURE(to_string(kind));
    auto fits = make_stream_decoder(kind, 4096);
    fits->feed(stream_of(kind, std::string(3000, 'a')));
    auto reply = fits->finish();
    REQUIRE(reply.ok());
    CHECK(reply.assistant.content == std::string(3000, 'a'));

    // The same reply with a 100 KiB text, fed as a server would send it: in 16 KiB pieces.
    auto decoder = make_stream_decoder(kind, 4096);
    auto stream = stream_of(kind, std::string(100 << 10, 'b'));
    size_t fed = 0;
    while (!decoder->failed() && fed < stream.size()) {
      decoder->feed(std::string_view{stream}.substr(fed, 16384));
      fed += 16384;
    }
    CHECK(decoder->failed());
    CHECK(fed == 16384); // at the piece that crossed the cap, not at the end of the line
    auto failure = decoder->finish();
    CHECK(failure.error == model_error_kind::transport);
    CHECK(failure.error_message.find(std::string{to_string(kind)} +
                                     ": a stream event exceeded 4096 bytes (--max-event-bytes); "
                                     "received: data: {") == 0);
  }
}

TEST_CASE("the default cap on one event rejects a 100 MiB line at 8 MiB") {
  auto decoder = make_stream_decoder(provider_kind::openai);
  std::string piece(1 << 20, 'c');
  decoder->feed("data: {\"choices\":[{\"delta\":{\"content\":\"");
  size_t fed = 0;
  while (!decoder->failed() && fed < (size_t{100} << 20)) {
    decoder->feed(piece);
    fed += piece.size();
  }
  CHECK(decoder->failed());
  CHECK(fed == size_t{8} << 20);
  CHECK(decoder->finish().error_message.find("exceeded 8388608 bytes") != std::string::npos);
}

namespace {

// An object, as arguments should be, whose one value nests 100,000 deep.
std::string deep_arguments() {
  return "{\"command\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
}

} // namespace

TEST_CASE("tool-call arguments nested 100,000 deep stay text in both stream decoders") {
  auto openai = make_stream_decoder(provider_kind::openai);
  json chunk = {{"choices",
                 {{{"delta",
                    {{"tool_calls",
                      {{{"index", 0},
                        {"id", "c1"},
                        {"function", {{"name", "shell"}, {"arguments", deep_arguments()}}}}}}}},
                   {"finish_reason", "tool_calls"}}}}};
  openai->feed("data: " + chunk.dump() + "\n\ndata: [DONE]\n\n");
  auto anthropic = make_stream_decoder(provider_kind::anthropic);
  json start = {{"type", "content_block_start"},
                {"index", 0},
                {"content_block", {{"type", "tool_use"}, {"id", "c1"}, {"name", "shell"}}}};
  json delta = {{"type", "content_block_delta"},
                {"index", 0},
                {"delta", {{"type", "input_json_delta"}, {"partial_json", deep_arguments()}}}};
  anthropic->feed("data: " + start.dump() + "\n\ndata: " + delta.dump() +
                  "\n\ndata: {\"type\": \"message_stop\"}\n\n");
  for (auto* decoder : {openai.get(), anthropic.get()}) {
    auto reply = decoder->finish();
    REQUIRE(reply.ok());
    REQUIRE(reply.assistant.tool_calls.size() == 1);
    // Kept as their text: the executor answers the model with an error naming the depth.
    CHECK(reply.assistant.tool_calls[0].input.is_string());
    CHECK(reply.assistant.tool_calls[0].input.get_ref<const std::string&>() == deep_arguments());
  }
}

TEST_CASE("a reply body or stream event nested 100,000 deep is a clear error, not a crash") {
  auto deep_input = std::string(100000, '[') + std::string(100000, ']');
  auto body = R"({"content": [{"type": "tool_use", "id": "t", "name": "shell", "input": )" +
              deep_input + "}]}";
  auto whole = parse_reply(provider_kind::anthropic, body);
  CHECK(whole.error == model_error_kind::transport);
  CHECK(whole.error_message.find("not a Messages JSON object (JSON nested deeper than 512 "
                                 "levels); received: ") != std::string::npos);
  auto openai_body = R"({"choices": [{"message": {"content": )" + deep_input + "}}]}";
  CHECK(parse_reply(provider_kind::openai, openai_body).error_message.find(
          "the response is not JSON (JSON nested deeper than 512 levels)") != std::string::npos);
  for (auto kind : {provider_kind::openai, provider_kind::anthropic}) {
    auto decoder = make_stream_decoder(kind);
    decoder->feed("data: {\"x\": " + deep_input + "}\n\n");
    auto reply = decoder->finish();
    CHECK(reply.error == model_error_kind::transport);
    CHECK(reply.error_message.find("malformed JSON in a stream event (JSON nested deeper than "
                                   "512 levels)") != std::string::npos);
    auto error = parse_error(kind, 500, "{\"error\": " + deep_input + "}");
    CHECK(error.error == model_error_kind::server);
  }
}

TEST_CASE("a stream event or body of an unexpected shape is a clear error, never an exception") {
  // Valid JSON whose fields have other types than the wire format's: nlohmann's value() and
  // get() throw on them, and an exception out of the model client would end it.
  auto anthropic = make_stream_decoder(provider_kind::anthropic);
  CHECK_NOTHROW(anthropic->feed("data: {\"type\":\"content_block_delta\",\"index\":0,"
                                "\"delta\":\"text\"}\n\n"));
  CHECK(anthropic->failed());
  auto failed = anthropic->finish();
  CHECK(failed.error == model_error_kind::transport);
  CHECK(failed.error_message.find("anthropic: a reply of an unexpected shape") == 0);

  // Usage is only counted: a count of another type is taken as unknown, the reply stands.
  auto openai = make_stream_decoder(provider_kind::openai);
  CHECK_NOTHROW(openai->feed(R"(data: {"choices":[{"delta":{"content":"hi"},"finish_reason":)"
                             R"("stop"}],"usage":{"prompt_tokens":"many","completion_tokens":[]}})"
                             "\n\ndata: [DONE]\n\n"));
  auto reply = openai->finish();
  REQUIRE(reply.ok());
  CHECK(reply.assistant.content == "hi");
  CHECK(reply.usage.input_tokens == 0);

  for (auto kind : {provider_kind::openai, provider_kind::anthropic}) {
    CAPTURE(to_string(kind));
    auto body = kind == provider_kind::openai
                  ? std::string{R"({"choices":[{"message":{"tool_calls":["not an object"]}}]})"}
                  : std::string{R"({"content":["not an object"]})"};
    model_reply whole;
    CHECK_NOTHROW(whole = parse_reply(kind, body));
    CHECK(whole.error == model_error_kind::transport);
    CHECK(whole.error_message.find("a reply of an unexpected shape") != std::string::npos);
  }
}

TEST_CASE("usage counts that do not fit a 64-bit integer are taken as unknown, not converted") {
  auto openai = make_stream_decoder(provider_kind::openai);
  openai->feed(R"(data: {"choices":[{"delta":{"content":"hi"},"finish_reason":"stop"}],)"
               R"("usage":{"prompt_tokens":1e300,"completion_tokens":-1e30}})"
               "\n\ndata: [DONE]\n\n");
  auto reply = openai->finish();
  REQUIRE(reply.ok());
  CHECK(reply.usage.input_tokens == 0);
  CHECK(reply.usage.output_tokens == 0);
  auto anthropic = parse_reply(provider_kind::anthropic,
                               R"({"content":[],"usage":{"input_tokens":1e300,"output_tokens":7}})");
  REQUIRE(anthropic.ok());
  CHECK(anthropic.usage.input_tokens == 0);
  CHECK(anthropic.usage.output_tokens == 7);
}

TEST_CASE("a request's tools are written from the set it offers, made once per set and format") {
  auto set = [](const std::string& name) {
    return shared_value<std::vector<tool_descriptor>>{std::vector<tool_descriptor>{
      {name, "does " + name, nlohmann::json{{"type", "object"}, {"required", {"x"}}}}}};
  };
  auto first = set("alpha");
  auto second = set("beta");
  for (auto kind : {provider_kind::openai, provider_kind::anthropic}) {
    provider_config config;
    config.kind = kind;
    config.model = "m";
    config.base_url = "http://127.0.0.1:1";
    config.format = tool_format::tool;
    model_request request;
    request.system_prompt = std::string{"sys"};
    request.tools = first;
    auto tools_of = [&](const model_request& r) {
      auto body = nlohmann::json::parse(build_request(config, r).body);
      REQUIRE(body.contains("tools"));
      CHECK(body.contains("messages"));
      CHECK(body["model"] == "m");
      return body["tools"];
    };
    auto a = tools_of(request);
    CHECK(a == tools_of(request)); // the kept text is the same
    request.tools = second; // another set is never answered from the first's text
    auto b = tools_of(request);
    CHECK(a.dump().find("alpha") != std::string::npos);
    CHECK(b.dump().find("beta") != std::string::npos);
    CHECK(b.dump().find("alpha") == std::string::npos);
    // Ten sets, more than are kept: each still gets its own.
    for (int i = 0; i < 10; ++i) {
      request.tools = set("t" + std::to_string(i));
      CHECK(tools_of(request).dump().find("\"t" + std::to_string(i) + "\"") != std::string::npos);
    }
  }
}
