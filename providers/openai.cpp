// OpenAI Chat Completions: request bodies, streamed chunks, whole replies, error bodies.

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_set>

#include "providers/formats.hpp"
#include "providers/json_text.hpp"
#include "providers/sse.hpp"

namespace troupe::detail {

namespace {

using nlohmann::json;

// The conversation as the `messages` array's text, written straight (see json_text.hpp), with
// each object's members in the order a dumped nlohmann object has them (by name).
void write_openai_messages(std::string& body, const model_request& request, bool native_tools) {
  body += '[';
  bool first = true;
  auto open = [&] {
    body += first ? "{\"content\":" : ",{\"content\":";
    first = false;
  };
  auto plain = [&](const char* role_name, const std::string& content) {
    open();
    append_json_string(body, content);
    body += ",\"role\":\"";
    body += role_name;
    body += "\"}";
  };
  if (!request.system_prompt->empty())
    plain("system", *request.system_prompt);
  // Ids of the calls sent natively: only their results travel as native results.
  std::unordered_set<std::string_view> native_ids;
  for (auto& ptr : request.context.messages) {
    const auto& m = *ptr;
    switch (m.role) {
      case role::user:
        plain("user", m.content);
        break;
      case role::system:
        plain("system", m.content);
        break;
      case role::assistant: {
        bool any_native = false;
        for (auto& call : m.tool_calls)
          any_native = any_native || (native_tools && is_native_call(call));
        if (!any_native) {
          plain("assistant", m.content);
          break;
        }
        open();
        if (m.content.empty())
          body += "null";
        else
          append_json_string(body, m.content);
        body += ",\"role\":\"assistant\",\"tool_calls\":[";
        bool first_call = true;
        for (auto& call : m.tool_calls) {
          if (!is_native_call(call))
            continue;
          native_ids.insert(call.id);
          body += first_call ? "{" : ",{";
          first_call = false;
          body += "\"function\":{\"arguments\":";
          // Arguments that were no JSON object stay the text the model wrote (see
          // parse_arguments), sent back as they came rather than quoted once more.
          append_json_string(body, call.input.is_string() ? call.input.get_ref<const std::string&>()
                                                          : call.input.dump());
          body += ",\"name\":";
          append_json_string(body, call.name);
          body += "},\"id\":";
          append_json_string(body, call.id);
          body += ",\"type\":\"function\"}";
        }
        body += "]}";
        break;
      }
      case role::tool:
        if (native_ids.count(m.tool_call_id)) {
          open();
          append_json_string(body, m.content);
          body += ",\"role\":\"tool\",\"tool_call_id\":";
          append_json_string(body, m.tool_call_id);
          body += '}';
        } else {
          plain("user", tool_result_as_text(m));
        }
        break;
    }
  }
  body += ']';
}

// OpenAI counts cached tokens inside prompt_tokens; troupe's input_tokens, like Anthropic's,
// are the uncached ones.
token_usage usage_from(const json& u) {
  token_usage usage;
  usage.output_tokens = detail::count_at(u, "completion_tokens");
  if (auto details = u.find("prompt_tokens_details"); details != u.end() && details->is_object())
    usage.cache_read_tokens = detail::count_at(*details, "cached_tokens");
  usage.input_tokens =
    std::max<int64_t>(0, detail::count_at(u, "prompt_tokens") - usage.cache_read_tokens);
  return usage;
}

struct partial_call {
  std::string id;
  std::string name;
  std::string arguments;
};

class openai_decoder : public sse_decoder_base {
public:
  explicit openai_decoder(size_t max_event_bytes) : sse_decoder_base(max_event_bytes) {}

  std::string feed(std::string_view bytes) override {
    std::string text;
    // Nothing follows [DONE]: what a server sends after it is not read.
    if (failed_ || done_)
      return text;
    for (auto& event : parser_.feed(bytes)) {
      if (event.data == "[DONE]") {
        done_ = true;
        break;
      }
      auto bounded = parse_json_bounded(sanitize_utf8(event.data));
      if (!bounded || !bounded->is_object()) {
        fail(bad_response(provider_kind::openai, model_error_kind::transport,
                          "malformed JSON in a stream event" + detail::depth_note(bounded),
                          event.data));
        return text;
      }
      auto chunk = std::move(*bounded);
      if (auto error = chunk.find("error"); error != chunk.end()) {
        fail(parse_error(provider_kind::openai, 500, chunk.dump()));
        return text;
      }
      if (auto usage = chunk.find("usage"); usage != chunk.end() && usage->is_object())
        usage_ = usage_from(*usage);
      auto choices = chunk.find("choices");
      if (choices == chunk.end() || !choices->is_array() || choices->empty())
        continue;
      const auto& choice = (*choices)[0];
      if (auto reason = choice.find("finish_reason"); reason != choice.end() && reason->is_string())
        finish_reason_ = reason->get<std::string>();
      auto delta = choice.find("delta");
      if (delta == choice.end() || !delta->is_object())
        continue;
      if (auto content = delta->find("content"); content != delta->end() && content->is_string()) {
        text += content->get<std::string>();
      }
      if (auto calls = delta->find("tool_calls"); calls != delta->end() && calls->is_array())
        for (auto& c : *calls) {
          auto& call = calls_[call_index(c)];
          if (auto id = c.find("id"); id != c.end() && id->is_string())
            call.id = id->get<std::string>();
          if (auto fn = c.find("function"); fn != c.end() && fn->is_object()) {
            if (auto name = fn->find("name"); name != fn->end() && name->is_string())
              call.name += name->get<std::string>();
            if (auto args = fn->find("arguments"); args != fn->end() && args->is_string())
              call.arguments += args->get<std::string>();
          }
        }
    }
    content_ += text;
    check_event_size(provider_kind::openai);
    return text;
  }

  bool complete() const override { return done_ && !failed_; }

  model_reply finish() override {
    if (failed_)
      return failure_;
    if (finish_reason_.empty() && !done_)
      return bad_response(provider_kind::openai, model_error_kind::transport,
                          "the stream ended before the reply was complete (no finish_reason)",
                          content_);
    model_reply reply;
    reply.assistant.role = role::assistant;
    reply.assistant.content = content_;
    for (auto& [index, call] : calls_)
      reply.assistant.tool_calls.push_back(
        {call.id, call.name, parse_arguments(call.arguments), call_format::native});
    reply.stop_reason = normalize_stop_reason(finish_reason_.empty() ? "stop" : finish_reason_);
    reply.usage = usage_;
    return reply;
  }

private:
  // Some OpenAI-compatible servers leave out `index`; then a new id starts a new call.
  int call_index(const json& delta) {
    if (auto i = delta.find("index"); i != delta.end() && i->is_number_integer())
      return last_index_ = i->get<int>();
    auto id = delta.find("id");
    if (id != delta.end() && id->is_string() && !id->get<std::string>().empty() &&
        (calls_.empty() || calls_[last_index_].id != id->get<std::string>()))
      last_index_ = calls_.empty() ? 0 : calls_.rbegin()->first + 1;
    return last_index_;
  }

  int last_index_ = 0;
  std::string content_;
  std::map<int, partial_call> calls_;
  std::string finish_reason_;
  token_usage usage_;
  bool done_ = false;
};

} // namespace

http_call build_openai_request(const provider_config& config, const model_request& request) {
  // The tools array (made once per set) goes last, as the dumped tree had it.
  const std::string* tools = nullptr;
  if (native_tools(config, request))
    tools = &cached_tools_text(request.tools, provider_kind::openai, [&request] {
      auto array = json::array();
      for (auto& t : *request.tools)
        array.push_back({{"type", "function"},
                         {"function",
                          {{"name", t.name},
                           {"description", t.description},
                           {"parameters", t.input_schema}}}});
      return array;
    });
  http_call call;
  auto& body = call.body;
  body.reserve(request_size_hint(request, tools));
  body += "{\"messages\":";
  write_openai_messages(body, request, tools != nullptr);
  body += ",\"model\":";
  append_json_string(body, config.model);
  if (config.stream)
    body += ",\"stream\":true,\"stream_options\":{\"include_usage\":true}";
  body += '}';
  if (tools != nullptr)
    append_member(body, "tools", *tools);
  auto base = config.base_url;
  while (!base.empty() && base.back() == '/')
    base.pop_back();
  call.url = base + "/chat/completions";
  call.headers.emplace_back("content-type", "application/json");
  if (!config.api_key.empty())
    call.headers.emplace_back("authorization", "Bearer " + config.api_key);
  return call;
}

std::unique_ptr<reply_decoder> make_openai_decoder(size_t max_event_bytes) {
  return std::make_unique<openai_decoder>(max_event_bytes);
}

model_reply parse_openai_reply(std::string_view body) {
  auto bounded = parse_json_bounded(sanitize_utf8(body));
  if (!bounded || !bounded->is_object())
    return bad_response(provider_kind::openai, model_error_kind::transport,
                        "the response is not JSON" + detail::depth_note(bounded), body);
  auto parsed = std::move(*bounded);
  auto choices = parsed.find("choices");
  if (choices == parsed.end() || !choices->is_array() || choices->empty() ||
      !(*choices)[0].contains("message"))
    return bad_response(provider_kind::openai, model_error_kind::transport,
                        "the response has no choices[0].message", body);
  const auto& choice = (*choices)[0];
  const auto& msg = choice["message"];
  model_reply reply;
  reply.assistant.role = role::assistant;
  if (auto content = msg.find("content"); content != msg.end() && content->is_string())
    reply.assistant.content = content->get<std::string>();
  if (auto calls = msg.find("tool_calls"); calls != msg.end() && calls->is_array())
    for (auto& c : *calls) {
      auto fn = c.value("function", json::object());
      reply.assistant.tool_calls.push_back({c.value("id", std::string{}),
                                            fn.value("name", std::string{}),
                                            parse_arguments(fn.value("arguments", std::string{})),
                                            call_format::native});
    }
  auto reason = choice.value("finish_reason", json{});
  reply.stop_reason = normalize_stop_reason(reason.is_string() ? reason.get<std::string>() : "stop");
  if (auto usage = parsed.find("usage"); usage != parsed.end() && usage->is_object())
    reply.usage = usage_from(*usage);
  return reply;
}

std::string openai_error_message(const json& body) {
  auto error = body.find("error");
  if (error == body.end())
    return {};
  if (error->is_string())
    return error->get<std::string>();
  if (!error->is_object())
    return {};
  auto text = error->value("message", std::string{});
  auto code = error->value("code", json{});
  if (code.is_string() && !code.get<std::string>().empty())
    text += " [" + code.get<std::string>() + "]";
  return text;
}

} // namespace troupe::detail
