// Anthropic Messages: request bodies, streamed events, whole replies, error bodies.

#include <map>
#include <string_view>
#include <unordered_set>

#include "providers/formats.hpp"
#include "providers/json_text.hpp"
#include "providers/sse.hpp"

namespace troupe::detail {

namespace {

using nlohmann::json;

// Anthropic refuses text blocks that hold only whitespace.
bool is_blank(const std::string& text) {
  return text.find_first_not_of(" \t\r\n") == std::string::npos;
}

// The `messages` array's text, written straight (see json_text.hpp), each object's members in
// the order a dumped nlohmann object has them (by name). Anthropic has no system role inside
// the conversation and wants user/assistant turns: consecutive blocks of one role are merged
// into one message, whose role is written once the next role begins.
class anthropic_messages {
public:
  explicit anthropic_messages(std::string& body) : body_(body) { body_ += '['; }

  void finish() {
    close();
    body_ += ']';
  }

  /// Starts a block of a message of this role: a new message when the role changes.
  void block(const char* role_name) {
    if (role_ != nullptr && std::string_view{role_} == role_name) {
      body_ += ',';
      return;
    }
    close();
    body_ += first_ ? "{\"content\":[" : ",{\"content\":[";
    first_ = false;
    role_ = role_name;
  }

  void text(const char* role_name, std::string_view content) {
    block(role_name);
    body_ += "{\"text\":";
    append_json_string(body_, content);
    body_ += ",\"type\":\"text\"}";
  }

private:
  void close() {
    if (role_ == nullptr)
      return;
    body_ += "],\"role\":\"";
    body_ += role_;
    body_ += "\"}";
    role_ = nullptr;
  }

  std::string& body_;
  const char* role_ = nullptr;
  bool first_ = true;
};

void write_anthropic_messages(std::string& body, const model_request& request,
                              bool native_tools) {
  anthropic_messages out{body};
  // Ids of the calls sent natively: only their results travel as native results.
  std::unordered_set<std::string_view> native_ids;
  for (auto& ptr : request.context.messages) {
    const auto& m = *ptr;
    switch (m.role) {
      case role::user:
        out.text("user", is_blank(m.content) ? std::string_view{"(empty)"} : m.content);
        break;
      case role::system:
        out.text("user", "[system] " + m.content);
        break;
      case role::assistant: {
        bool any = !is_blank(m.content);
        if (any)
          out.text("assistant", m.content);
        for (auto& call : m.tool_calls) {
          if (!native_tools || !is_native_call(call))
            continue;
          native_ids.insert(call.id);
          out.block("assistant");
          body += "{\"id\":";
          append_json_string(body, call.id);
          body += ",\"input\":";
          body += call.input.is_object()
                    ? call.input.dump(-1, ' ', false, json::error_handler_t::replace)
                    : "{}";
          body += ",\"name\":";
          append_json_string(body, call.name);
          body += ",\"type\":\"tool_use\"}";
          any = true;
        }
        if (!any)
          out.text("assistant", "(no content)");
        break;
      }
      case role::tool:
        if (native_ids.count(m.tool_call_id)) {
          out.block("user");
          body += "{\"content\":";
          append_json_string(body,
                             is_blank(m.content) ? std::string_view{"(no output)"} : m.content);
          body += m.is_error ? ",\"is_error\":true" : ",\"is_error\":false";
          body += ",\"tool_use_id\":";
          append_json_string(body, m.tool_call_id);
          body += ",\"type\":\"tool_result\"}";
        } else {
          out.text("user", tool_result_as_text(m));
        }
        break;
    }
  }
  out.finish();
}

token_usage usage_from(const json& u, token_usage usage = {}) {
  // A later event repeats only some counts: those it leaves out keep their earlier value.
  auto take = [&u](const char* key, int64_t& count) {
    if (u.contains(key))
      count = detail::count_at(u, key);
  };
  take("input_tokens", usage.input_tokens);
  take("output_tokens", usage.output_tokens);
  take("cache_read_input_tokens", usage.cache_read_tokens);
  take("cache_creation_input_tokens", usage.cache_write_tokens);
  return usage;
}

struct block {
  std::string type;
  std::string text;
  std::string id;
  std::string name;
  std::string input_json;
};

class anthropic_decoder : public sse_decoder_base {
public:
  explicit anthropic_decoder(size_t max_event_bytes) : sse_decoder_base(max_event_bytes) {}

  std::string feed(std::string_view bytes) override {
    std::string text;
    // Nothing follows message_stop: what a server sends after it is not read.
    if (failed_ || stopped_)
      return text;
    for (auto& event : parser_.feed(bytes)) {
      if (stopped_)
        break;
      auto bounded = parse_json_bounded(sanitize_utf8(event.data));
      if (!bounded || !bounded->is_object()) {
        fail(bad_response(provider_kind::anthropic, model_error_kind::transport,
                          "malformed JSON in a stream event" + detail::depth_note(bounded),
                          event.data));
        return text;
      }
      auto data = std::move(*bounded);
      auto type = event.event.empty() ? data.value("type", std::string{}) : event.event;
      if (type == "message_start") {
        if (auto msg = data.find("message"); msg != data.end() && msg->contains("usage"))
          usage_ = usage_from((*msg)["usage"], usage_);
      } else if (type == "content_block_start") {
        auto& b = blocks_[data.value("index", 0)];
        auto start = data.value("content_block", json::object());
        b.type = start.value("type", std::string{});
        b.id = start.value("id", std::string{});
        b.name = start.value("name", std::string{});
        if (b.type == "text")
          b.text = start.value("text", std::string{});
      } else if (type == "content_block_delta") {
        auto& b = blocks_[data.value("index", 0)];
        auto delta = data.value("delta", json::object());
        auto kind = delta.value("type", std::string{});
        if (kind == "text_delta") {
          auto piece = delta.value("text", std::string{});
          b.text += piece;
          text += piece;
        } else if (kind == "input_json_delta") {
          b.input_json += delta.value("partial_json", std::string{});
        }
      } else if (type == "message_delta") {
        auto delta = data.value("delta", json::object());
        if (auto reason = delta.find("stop_reason"); reason != delta.end() && reason->is_string())
          stop_reason_ = reason->get<std::string>();
        if (auto usage = data.find("usage"); usage != data.end() && usage->is_object())
          usage_ = usage_from(*usage, usage_);
      } else if (type == "message_stop") {
        stopped_ = true;
      } else if (type == "error") {
        auto error = data.value("error", json::object());
        auto kind = error.value("type", std::string{});
        int32_t status = kind == "overloaded_error" ? 529 : kind == "rate_limit_error" ? 429 : 500;
        fail(parse_error(provider_kind::anthropic, status, data.dump()));
        return text;
      }
      // ping, content_block_stop and event types added later carry nothing we need.
    }
    check_event_size(provider_kind::anthropic);
    return text;
  }

  bool complete() const override { return stopped_ && !failed_; }

  model_reply finish() override {
    if (failed_)
      return failure_;
    if (!stopped_ && stop_reason_.empty()) {
      std::string so_far;
      for (auto& [i, b] : blocks_)
        so_far += b.text;
      return bad_response(provider_kind::anthropic, model_error_kind::transport,
                          "the stream ended before message_stop", so_far);
    }
    model_reply reply;
    reply.assistant.role = role::assistant;
    for (auto& [index, b] : blocks_) {
      if (b.type == "text")
        reply.assistant.content += b.text;
      else if (b.type == "tool_use")
        reply.assistant.tool_calls.push_back(
          {b.id, b.name, parse_arguments(b.input_json), call_format::native});
    }
    reply.stop_reason = normalize_stop_reason(stop_reason_.empty() ? "end_turn" : stop_reason_);
    reply.usage = usage_;
    return reply;
  }

private:
  std::map<int, block> blocks_;
  std::string stop_reason_;
  token_usage usage_;
  bool stopped_ = false;
};

} // namespace

http_call build_anthropic_request(const provider_config& config, const model_request& request) {
  // The tools array (made once per set) goes last, as the dumped tree had it.
  const std::string* tools = nullptr;
  if (native_tools(config, request))
    tools = &cached_tools_text(request.tools, provider_kind::anthropic, [&request] {
      auto array = json::array();
      for (auto& t : *request.tools)
        array.push_back(
          {{"name", t.name}, {"description", t.description}, {"input_schema", t.input_schema}});
      return array;
    });
  http_call call;
  auto& body = call.body;
  body.reserve(request_size_hint(request, tools));
  body += "{\"max_tokens\":";
  body += std::to_string(config.max_tokens);
  body += ",\"messages\":";
  write_anthropic_messages(body, request, tools != nullptr);
  body += ",\"model\":";
  append_json_string(body, config.model);
  if (config.stream)
    body += ",\"stream\":true";
  if (!request.system_prompt->empty()) {
    body += ",\"system\":";
    append_json_string(body, *request.system_prompt);
  }
  body += '}';
  if (tools != nullptr)
    append_member(body, "tools", *tools);
  auto base = config.base_url;
  while (!base.empty() && base.back() == '/')
    base.pop_back();
  call.url = base + "/v1/messages";
  call.headers.emplace_back("content-type", "application/json");
  call.headers.emplace_back("x-api-key", config.api_key);
  call.headers.emplace_back("anthropic-version", "2023-06-01");
  return call;
}

std::unique_ptr<reply_decoder> make_anthropic_decoder(size_t max_event_bytes) {
  return std::make_unique<anthropic_decoder>(max_event_bytes);
}

model_reply parse_anthropic_reply(std::string_view body) {
  auto bounded = parse_json_bounded(sanitize_utf8(body));
  auto parsed = bounded ? std::move(*bounded) : nlohmann::json{};
  if (!parsed.is_object() || !parsed.contains("content") || !parsed["content"].is_array())
    return bad_response(provider_kind::anthropic, model_error_kind::transport,
                        "the response is not a Messages JSON object" + detail::depth_note(bounded),
                        body);
  model_reply reply;
  reply.assistant.role = role::assistant;
  for (auto& b : parsed["content"]) {
    auto type = b.value("type", std::string{});
    if (type == "text")
      reply.assistant.content += b.value("text", std::string{});
    else if (type == "tool_use")
      reply.assistant.tool_calls.push_back({b.value("id", std::string{}),
                                            b.value("name", std::string{}),
                                            b.value("input", json::object()),
                                            call_format::native});
  }
  auto reason = parsed.value("stop_reason", json{});
  reply.stop_reason =
    normalize_stop_reason(reason.is_string() ? reason.get<std::string>() : "end_turn");
  if (auto usage = parsed.find("usage"); usage != parsed.end() && usage->is_object())
    reply.usage = usage_from(*usage);
  return reply;
}

std::string anthropic_error_message(const json& body) {
  auto error = body.find("error");
  if (error == body.end() || !error->is_object())
    return {};
  auto type = error->value("type", std::string{});
  auto text = error->value("message", std::string{});
  return type.empty() ? text : type + ": " + text;
}

} // namespace troupe::detail
