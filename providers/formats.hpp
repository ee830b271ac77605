#pragma once
// Private to providers/: the per-provider halves behind provider.hpp.

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "protocol/bounded_json.hpp"
#include "providers/provider.hpp"
#include "providers/sse.hpp"

namespace troupe::detail {

/// What both streamed decoders share: the SSE parser, and the first failure, which sticks.
class sse_decoder_base : public reply_decoder {
public:
  explicit sse_decoder_base(size_t max_event_bytes) : parser_(max_event_bytes) {}

  bool failed() const override { return failed_; }
  size_t events() const override { return parser_.events(); }

protected:
  void fail(model_reply reply) {
    failed_ = true;
    failure_ = std::move(reply);
  }

  /// Fails the reply once an event outgrew the parser's cap (after the events before it).
  void check_event_size(provider_kind kind) {
    if (parser_.oversized() && !failed_)
      fail(bad_response(kind, model_error_kind::transport,
                        "a stream event exceeded " + std::to_string(parser_.max_event_bytes()) +
                          " bytes (--max-event-bytes)",
                        parser_.oversized_excerpt()));
  }

  sse_parser parser_;
  bool failed_ = false;
  model_reply failure_;
};

http_call build_openai_request(const provider_config& config, const model_request& request);
std::unique_ptr<reply_decoder> make_openai_decoder(size_t max_event_bytes);
model_reply parse_openai_reply(std::string_view body);
std::string openai_error_message(const nlohmann::json& body);

http_call build_anthropic_request(const provider_config& config, const model_request& request);
std::unique_ptr<reply_decoder> make_anthropic_decoder(size_t max_event_bytes);
model_reply parse_anthropic_reply(std::string_view body);
std::string anthropic_error_message(const nlohmann::json& body);

/// Parses tool-call arguments; text that is not a JSON object is kept as a JSON string, so the
/// executor answers the model with a schema error instead of running a guess.
nlohmann::json parse_arguments(const std::string& text);

/// Returns " (JSON nested deeper than N levels)" when parsed failed for its depth, else "": what
/// a "malformed JSON" message adds so the reader knows why valid-looking JSON was refused.
std::string depth_note(const expected<nlohmann::json>& parsed);

/// Returns the count at key of a usage object, 0 when it is missing, not a number, or a number
/// no int64_t holds (a count is only counted: a bad one must not fail the reply).
int64_t count_at(const nlohmann::json& object, const char* key);

/// Renders a tool result as plain text for providers that are not told about tools.
std::string tool_result_as_text(const message& m);

/// Returns true when a message should travel as the provider's native tool call or result.
bool is_native_call(const tool_call& call);

/// Returns true when the request offers tools natively; only then may the conversation hold
/// native calls and results (the APIs refuse them otherwise), else they travel as text.
inline bool native_tools(const provider_config& config, const model_request& request) {
  return config.format == tool_format::tool && !request.tools->empty();
}

/// The `tools` array of a request as JSON text, made by `make` (the format's array) once per
/// set of tools and format and kept, per thread, for the last few sets: a fleet's agents share
/// one set, whose schemas were copied into a tree and escaped again for every request.
const std::string& cached_tools_text(const shared_value<std::vector<tool_descriptor>>& tools,
                                     provider_kind kind,
                                     const std::function<nlohmann::json()>& make);

/// About how many bytes a request's body takes (its texts, the tools array's text when there is
/// one, room for the framing and tool inputs), so that writing it seldom reallocates: large
/// tool inputs, not counted, make it grow as a string does.
size_t request_size_hint(const model_request& request, const std::string* tools_text);

/// Adds `"key": value_text` (JSON text) as the last member of `object_text`, a JSON object's
/// text.
void append_member(std::string& object_text, const char* key, const std::string& value_text);

/// Normalises stop reasons: "end_turn", "tool_use", "max_tokens", "refusal", …
std::string normalize_stop_reason(const std::string& provider_reason);

} // namespace troupe::detail
