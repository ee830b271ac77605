// Request bodies as the providers read them: every kind of message in each wire format, and
// JSON strings written byte for byte as nlohmann writes them, whatever bytes a tool printed.

#include <random>

#include <doctest/doctest.h>

#include "providers/json_text.hpp"
#include "providers/provider.hpp"

using namespace troupe;
using nlohmann::json;

namespace {

std::string dumped(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// One of each: a blank prompt, a system note, a reply with text and a native call, its result,
// a reply with only calls (two), their results (one an error, one blank), a reply with a call
// parsed from text beside a native one and their results, a blank reply with no call, and text
// that is not UTF-8.
std::vector<message_ptr> every_kind_of_message() {
  std::vector<message> log;
  auto add = [&log](role r, std::string content) {
    message m;
    m.role = r;
    m.content = std::move(content);
    log.push_back(m);
    return &log.back();
  };
  add(role::user, " \n");
  add(role::system, "compacted \"summary\"");
  auto* first = add(role::assistant, "Looking.\tTab");
  first->tool_calls = {{"c1", "read", {{"path", "a\\b.txt"}}, call_format::native}};
  auto calls = first->tool_calls;
  log.push_back(make_tool_message(calls[0], tool_result{"line\u0001\x7f", false, 0, false}));
  auto* both = add(role::assistant, "");
  both->tool_calls = {{"c2", "shell", {{"command", "ls"}}, call_format::native},
                      {"c3", "shell", json::array({1}), call_format::native}};
  calls = both->tool_calls;
  log.push_back(make_tool_message(calls[0], tool_result{"boom", true, 2, false}));
  log.push_back(make_tool_message(calls[1], tool_result{"  ", false, 0, false}));
  auto* parsed = add(role::assistant, "<shell>pwd</shell>");
  parsed->tool_calls = {{"x1", "shell", {{"command", "pwd"}}, call_format::xml},
                        {"n1", "ls", {{"path", "."}}, call_format::native}};
  calls = parsed->tool_calls;
  log.push_back(make_tool_message(calls[0], tool_result{"/w", false, 0, false}));
  log.push_back(make_tool_message(calls[1], tool_result{"a b", false, 0, false}));
  add(role::assistant, " ");
  add(role::user, std::string{"caf\xc3\xa9 bad\xff\xe2\x82 end\xf0\x9f"});
  std::vector<message_ptr> out;
  for (auto& m : log)
    out.push_back(std::make_shared<const message>(m));
  return out;
}

model_request request_with(std::vector<message_ptr> messages) {
  model_request request;
  request.system_prompt = std::string{"You are \"troupe\".\n"};
  request.context.messages = std::move(messages);
  request.tools = std::vector<tool_descriptor>{{"shell", "Run", json{{"type", "object"}}}};
  return request;
}

provider_config config_for(provider_kind kind) {
  provider_config config;
  config.kind = kind;
  config.model = "m\"1";
  config.base_url = "http://127.0.0.1:1";
  config.format = tool_format::tool;
  return config;
}

} // namespace

TEST_CASE("a JSON string is written byte for byte as nlohmann writes it, whatever the bytes") {
  std::vector<std::string> cases = {
    "",           "plain",        "\"quoted\" \\ back",       std::string{"nul\0in", 7},
    "\b\f\n\r\t", "\x01\x1f\x7f", "caf\xc3\xa9 \xe2\x82\xac", "\xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf",
    "\xc0\xaf",   "\xe0\x80\xaf", "\xed\xa0\x80",             "\xf4\x90\x80\x80",
    "\xe2\x82",   "\xe2\x82x",    "\x80\xbf",                 "\xf0\x9f\x98",
    "\xff\xfe",   "\xc3",         "\xe2\xc3\xa9",             "a\xf5\x80\x80\x80z"};
  // And random strings of the bytes where writers differ: escapes, lead bytes of every length,
  // continuation bytes, bytes no sequence may hold.
  const std::string alphabet = std::string{"aZ\"\\/\b\f\n\r\t\x01\x1f\x7f\0", 14} +
                               "\x80\x8f\x90\x9f\xa0\xbf\xc0\xc1\xc2\xdf\xe0\xe1\xed\xee\xef"
                               "\xf0\xf1\xf3\xf4\xf5\xff";
  std::mt19937 random{20261204};
  for (int n = 0; n < 20000; ++n) {
    std::string text;
    auto length = random() % 12;
    for (size_t k = 0; k < length; ++k)
      text += alphabet[random() % alphabet.size()];
    cases.push_back(text);
  }
  size_t differing = 0;
  for (auto& text : cases) {
    std::string written;
    append_json_string(written, text);
    if (written != dumped(json(text)) && ++differing <= 5)
      CHECK_MESSAGE(written == dumped(json(text)),
                    "for the bytes of " << json(text).dump(-1, ' ', true,
                                                           json::error_handler_t::replace));
  }
  CHECK(differing == 0);
  std::string appended = "{\"a\":";
  append_json_string(appended, "x");
  CHECK(appended == "{\"a\":\"x\"");
}

TEST_CASE("an OpenAI request body holds every kind of message as it did when built as a tree") {
  auto config = config_for(provider_kind::openai);
  auto body = build_request(config, request_with(every_kind_of_message())).body;
  // The canonical text of itself: members by name, no spaces, as a dumped tree.
  CHECK(body == dumped(json::parse(body)));
  auto parsed = json::parse(body);
  CHECK(parsed["model"] == "m\"1");
  CHECK(parsed["stream"] == true);
  CHECK(parsed["stream_options"] == json{{"include_usage", true}});
  CHECK(parsed["tools"].size() == 1);
  auto expected = json::array({
    {{"role", "system"}, {"content", "You are \"troupe\".\n"}},
    {{"role", "user"}, {"content", " \n"}},
    {{"role", "system"}, {"content", "compacted \"summary\""}},
    {{"role", "assistant"},
     {"content", "Looking.\tTab"},
     {"tool_calls",
      {{{"id", "c1"},
        {"type", "function"},
        {"function", {{"name", "read"}, {"arguments", R"({"path":"a\\b.txt"})"}}}}}}},
    {{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "line\u0001\x7f"}},
    {{"role", "assistant"},
     {"content", nullptr},
     {"tool_calls",
      {{{"id", "c2"},
        {"type", "function"},
        {"function", {{"name", "shell"}, {"arguments", R"({"command":"ls"})"}}}},
       {{"id", "c3"},
        {"type", "function"},
        {"function", {{"name", "shell"}, {"arguments", "[1]"}}}}}}},
    {{"role", "tool"}, {"tool_call_id", "c2"}, {"content", "boom"}},
    {{"role", "tool"}, {"tool_call_id", "c3"}, {"content", "  "}},
    {{"role", "assistant"},
     {"content", "<shell>pwd</shell>"},
     {"tool_calls",
      {{{"id", "n1"},
        {"type", "function"},
        {"function", {{"name", "ls"}, {"arguments", R"({"path":"."})"}}}}}}},
    {{"role", "user"}, {"content", "Result of shell (exit code 0):\n/w"}},
    {{"role", "tool"}, {"tool_call_id", "n1"}, {"content", "a b"}},
    {{"role", "assistant"}, {"content", " "}},
    {{"role", "user"}, {"content", "caf\xc3\xa9 bad\xef\xbf\xbd\xef\xbf\xbd end\xef\xbf\xbd"}},
  });
  CHECK(parsed["messages"] == expected);
  // Without tools offered, native calls and results travel as text.
  config.format = tool_format::xml;
  auto plain = json::parse(build_request(config, request_with(every_kind_of_message())).body);
  CHECK_FALSE(plain.contains("tools"));
  CHECK(plain["messages"][3] == json{{"role", "assistant"}, {"content", "Looking.\tTab"}});
  CHECK(plain["messages"][4] ==
        json{{"role", "user"}, {"content", "Result of read:\nline\u0001\x7f"}});
  CHECK(plain["messages"][6] ==
        json{{"role", "user"}, {"content", "Result of shell (exit code 2) [error]:\nboom"}});
  // No system prompt: the conversation starts with its first message.
  auto request = request_with(every_kind_of_message());
  request.system_prompt = std::string{};
  auto bare = json::parse(build_request(config, request).body);
  CHECK(bare["messages"][0] == json{{"role", "user"}, {"content", " \n"}});
}

TEST_CASE("an Anthropic request body holds every kind of message as it did when built as a tree") {
  auto config = config_for(provider_kind::anthropic);
  config.max_tokens = 1234;
  auto body = build_request(config, request_with(every_kind_of_message())).body;
  CHECK(body == dumped(json::parse(body)));
  auto parsed = json::parse(body);
  CHECK(parsed["model"] == "m\"1");
  CHECK(parsed["max_tokens"] == 1234);
  CHECK(parsed["stream"] == true);
  CHECK(parsed["system"] == "You are \"troupe\".\n");
  CHECK(parsed["tools"].size() == 1);
  auto text = [](const std::string& t) { return json{{"type", "text"}, {"text", t}}; };
  auto expected = json::array({
    {{"role", "user"}, {"content", {text("(empty)"), text("[system] compacted \"summary\"")}}},
    {{"role", "assistant"},
     {"content",
      {text("Looking.\tTab"),
       {{"type", "tool_use"}, {"id", "c1"}, {"name", "read"}, {"input", {{"path", "a\\b.txt"}}}}}}},
    {{"role", "user"},
     {"content",
      {{{"type", "tool_result"},
        {"tool_use_id", "c1"},
        {"content", "line\u0001\x7f"},
        {"is_error", false}}}}},
    {{"role", "assistant"},
     {"content",
      {{{"type", "tool_use"}, {"id", "c2"}, {"name", "shell"}, {"input", {{"command", "ls"}}}},
       {{"type", "tool_use"}, {"id", "c3"}, {"name", "shell"}, {"input", json::object()}}}}},
    {{"role", "user"},
     {"content",
      {{{"type", "tool_result"}, {"tool_use_id", "c2"}, {"content", "boom"}, {"is_error", true}},
       {{"type", "tool_result"},
        {"tool_use_id", "c3"},
        {"content", "(no output)"},
        {"is_error", false}}}}},
    {{"role", "assistant"},
     {"content",
      {text("<shell>pwd</shell>"),
       {{"type", "tool_use"}, {"id", "n1"}, {"name", "ls"}, {"input", {{"path", "."}}}}}}},
    {{"role", "user"},
     {"content",
      {text("Result of shell (exit code 0):\n/w"),
       {{"type", "tool_result"}, {"tool_use_id", "n1"}, {"content", "a b"}, {"is_error", false}}}}},
    {{"role", "assistant"}, {"content", {text("(no content)")}}},
    {{"role", "user"},
     {"content", {text("caf\xc3\xa9 bad\xef\xbf\xbd\xef\xbf\xbd end\xef\xbf\xbd")}}},
  });
  CHECK(parsed["messages"] == expected);
  // A conversation of one prompt, without a system prompt, not streamed.
  auto request = request_with({every_kind_of_message().back()});
  request.system_prompt = std::string{};
  config.stream = false;
  auto alone = json::parse(build_request(config, request).body);
  CHECK_FALSE(alone.contains("system"));
  CHECK_FALSE(alone.contains("stream"));
  CHECK(alone["messages"].size() == 1);
}

TEST_CASE("a 1,000-message request body is the canonical text of what it parses to") {
  // In both formats, byte for byte the dump of its own tree: members by name, merged turns
  // closed, nothing in a long conversation written differently.
  std::vector<message_ptr> log;
  for (int round = 0; round < 250; ++round)
    for (auto& m : every_kind_of_message())
      if (log.size() < 1000)
        log.push_back(m);
  for (auto kind : {provider_kind::openai, provider_kind::anthropic}) {
    auto body = build_request(config_for(kind), request_with(log)).body;
    CHECK(body == dumped(json::parse(body)));
  }
}
