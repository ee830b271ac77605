#include "providers/provider.hpp"

#include "providers/formats.hpp"
#include "providers/sse.hpp"

#include <optional>

#include "protocol/bounded_json.hpp"

namespace troupe {

const char* to_string(provider_kind k) {
  return k == provider_kind::openai ? "openai" : "anthropic";
}

http_call build_request(const provider_config& config, const model_request& request) {
  return config.kind == provider_kind::openai ? detail::build_openai_request(config, request)
                                              : detail::build_anthropic_request(config, request);
}

namespace {

// What a reply whose JSON is valid but whose fields have other types than the wire format's
// becomes: nlohmann's value() and get() throw on those, and an exception must never leave the
// model client (it would end the actor, and with it the session's model).
model_reply unexpected_shape(provider_kind kind, const std::exception& e, std::string_view got) {
  return bad_response(kind, model_error_kind::transport,
                      std::string{"a reply of an unexpected shape ("} + e.what() + ")", got);
}

// Keeps a decoder's exceptions inside it: the first one fails the reply.
class guarded_decoder : public reply_decoder {
public:
  guarded_decoder(provider_kind kind, std::unique_ptr<reply_decoder> inner)
      : kind_(kind), inner_(std::move(inner)) {}

  std::string feed(std::string_view bytes) override {
    if (failure_)
      return {};
    try {
      return inner_->feed(bytes);
    } catch (const std::exception& e) {
      failure_ = unexpected_shape(kind_, e, bytes);
      return {};
    }
  }

  model_reply finish() override {
    if (failure_)
      return *failure_;
    try {
      return inner_->finish();
    } catch (const std::exception& e) {
      return unexpected_shape(kind_, e, {});
    }
  }

  bool failed() const override { return failure_.has_value() || inner_->failed(); }
  size_t events() const override { return inner_->events(); }
  bool complete() const override { return !failure_ && inner_->complete(); }

private:
  provider_kind kind_;
  std::unique_ptr<reply_decoder> inner_;
  std::optional<model_reply> failure_;
};

} // namespace

std::unique_ptr<reply_decoder> make_stream_decoder(provider_kind kind, size_t max_event_bytes) {
  return std::make_unique<guarded_decoder>(
    kind, kind == provider_kind::openai ? detail::make_openai_decoder(max_event_bytes)
                                        : detail::make_anthropic_decoder(max_event_bytes));
}

model_reply parse_reply(provider_kind kind, std::string_view body) {
  try {
    return kind == provider_kind::openai ? detail::parse_openai_reply(body)
                                         : detail::parse_anthropic_reply(body);
  } catch (const std::exception& e) {
    return unexpected_shape(kind, e, body);
  }
}

int64_t detail::count_at(const nlohmann::json& object, const char* key) {
  auto value = object.find(key);
  if (value == object.end() || !value->is_number() || !number_fits<int64_t>(*value))
    return 0;
  return value->get<int64_t>();
}

model_error_kind error_kind_for_status(int32_t status) {
  switch (status) {
    case 408:
    case 409:
    case 429:
      return model_error_kind::rate_limited;
    case 413:
      return model_error_kind::prompt_too_long;
    default:
      return status >= 500 ? model_error_kind::server : model_error_kind::request;
  }
}

namespace detail {

const std::string& cached_tools_text(const shared_value<std::vector<tool_descriptor>>& tools,
                                     provider_kind kind,
                                     const std::function<nlohmann::json()>& make) {
  // Each entry holds its set alive, so a set's address names it for as long as it is here.
  struct entry {
    shared_value<std::vector<tool_descriptor>> tools;
    provider_kind kind;
    std::string text;
  };
  constexpr size_t kept = 8;
  thread_local std::vector<entry> cache;
  for (auto& known : cache)
    if (&known.tools.get() == &tools.get() && known.kind == kind)
      return known.text;
  if (cache.size() >= kept)
    cache.erase(cache.begin());
  cache.push_back({tools, kind, make().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)});
  return cache.back().text;
}

size_t request_size_hint(const model_request& request, const std::string* tools_text) {
  size_t bytes = request.system_prompt->size() + 256 + (tools_text ? tools_text->size() : 0);
  for (auto& m : request.context.messages)
    bytes += m->content.size() + m->tool_call_id.size() + 128 * (1 + m->tool_calls.size());
  return bytes + bytes / 16; // escapes
}

void append_member(std::string& object_text, const char* key, const std::string& value_text) {
  // A dumped object ends in '}' and holds at least one member here (the model).
  object_text.pop_back();
  object_text += object_text.back() == '{' ? "\"" : ",\"";
  object_text += key;
  object_text += "\":";
  object_text += value_text;
  object_text += '}';
}

} // namespace detail

bool is_retryable_status(int32_t status) {
  switch (status) {
    case 408:
    case 409:
    case 429:
    case 500:
    case 502:
    case 503:
    case 504:
    case 529:
      return true;
    default:
      return false;
  }
}

model_reply bad_response(provider_kind kind, model_error_kind error, const std::string& what,
                         std::string_view received) {
  model_reply reply;
  reply.error = error;
  reply.error_message = std::string{to_string(kind)} + ": " + what;
  // Nothing to quote is said by leaving the quote out, not by an empty one.
  if (!received.empty())
    reply.error_message += "; received: " + sanitize_utf8(received.substr(0, 200));
  return reply;
}

model_reply parse_error(provider_kind kind, int32_t status, std::string_view body) {
  model_reply reply;
  reply.error = error_kind_for_status(status);
  reply.error_status = status;
  auto parsed = parse_json_bounded(sanitize_utf8(body));
  std::string text;
  if (parsed && parsed->is_object())
    text = kind == provider_kind::openai ? detail::openai_error_message(*parsed)
                                         : detail::anthropic_error_message(*parsed);
  if (text.empty())
    return bad_response(kind, reply.error, "HTTP " + std::to_string(status), body);
  auto lower = text;
  for (auto& c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  bool too_long = lower.find("prompt is too long") != std::string::npos ||
                  lower.find("context_length_exceeded") != std::string::npos ||
                  lower.find("maximum context length") != std::string::npos;
  if (too_long)
    reply.error = model_error_kind::prompt_too_long;
  reply.error_message = std::string{to_string(kind)} + " (HTTP " + std::to_string(status) +
                        "): " + text;
  return reply;
}

namespace detail {

nlohmann::json parse_arguments(const std::string& text) {
  if (text.empty())
    return nlohmann::json::object();
  auto parsed = parse_json_bounded(sanitize_utf8(text));
  if (!parsed || !parsed->is_object())
    return text;
  return std::move(*parsed);
}

std::string depth_note(const expected<nlohmann::json>& parsed) {
  if (parsed || parsed.error() == invalid_json_message)
    return {};
  return " (" + parsed.error() + ")";
}

std::string tool_result_as_text(const message& m) {
  std::string head = "Result of " + m.tool_name;
  if (m.tool_name == "shell" && m.exit_code >= 0) // -1: no exit status (nothing ran)
    head += " (exit code " + std::to_string(m.exit_code) + ")";
  if (m.is_error)
    head += " [error]";
  return head + ":\n" + m.content;
}

bool is_native_call(const tool_call& call) { return call.format == call_format::native; }

std::string normalize_stop_reason(const std::string& r) {
  if (r == "stop" || r == "end_turn" || r == "stop_sequence")
    return "end_turn";
  if (r == "tool_calls" || r == "function_call" || r == "tool_use")
    return "tool_use";
  if (r == "length" || r == "max_tokens")
    return "max_tokens";
  if (r == "content_filter" || r == "refusal")
    return "refusal";
  return r;
}

} // namespace detail

} // namespace troupe
