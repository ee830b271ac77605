#pragma once
// What troupe needs to talk to one model API: its kind, endpoint, credentials and options.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/model.hpp"
#include "providers/sse.hpp"
#include "tools/tool_parser.hpp"

namespace troupe {

/// The wire formats troupe speaks.
enum class provider_kind : uint8_t {
  openai,    ///< OpenAI Chat Completions (also Ollama, vLLM, llama.cpp, LM Studio, OpenRouter)
  anthropic, ///< Anthropic Messages
};

/// Returns "openai" or "anthropic".
const char* to_string(provider_kind k);

/// One model endpoint and how to call it.
struct provider_config {
  provider_kind kind = provider_kind::openai;
  std::string model;
  /// Base URL without the endpoint path, e.g. "https://api.openai.com/v1".
  std::string base_url;
  std::string api_key;
  bool stream = true;
  tool_format format = tool_format::tool;
  int32_t max_tokens = 8192;
};

/// An HTTP request ready for the engine.
struct http_call {
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

/// Builds the request for one generation in the provider's wire format.
http_call build_request(const provider_config& config, const model_request& request);

/// Assembles a streamed reply from the response body's bytes.
class reply_decoder {
public:
  virtual ~reply_decoder() = default;

  /// Feeds body bytes; returns the text that arrived (for live display).
  virtual std::string feed(std::string_view bytes) = 0;

  /// Returns the whole reply, or an error reply when the stream was malformed or incomplete.
  virtual model_reply finish() = 0;

  /// Returns true once the stream is known to be bad (finish() then says why); further bytes
  /// are ignored.
  virtual bool failed() const = 0;

  /// Returns how many events the stream has completed so far.
  virtual size_t events() const = 0;

  /// Returns true once the stream's closing event has arrived (OpenAI's [DONE], Anthropic's
  /// message_stop) and nothing failed: the reply is whole, whatever the connection does next.
  virtual bool complete() const = 0;
};

/// Returns a decoder for a streamed (SSE) response of the given provider; an event larger than
/// `max_event_bytes` fails it (without buffering more than that).
std::unique_ptr<reply_decoder>
make_stream_decoder(provider_kind kind, size_t max_event_bytes = default_max_event_bytes);

/// Parses a whole (non-streamed) 200 response body.
model_reply parse_reply(provider_kind kind, std::string_view body);

/// Turns an error status and body into an error reply with the provider's own message.
model_reply parse_error(provider_kind kind, int32_t status, std::string_view body);

/// Returns an error reply of the given kind whose message names the provider and quotes the
/// first 200 bytes of what was received (nothing when nothing was).
model_reply bad_response(provider_kind kind, model_error_kind error, const std::string& what,
                         std::string_view received);

/// Maps an HTTP status to the error kind a provider would report.
model_error_kind error_kind_for_status(int32_t status);

/// Returns true for statuses worth retrying (408, 409, 429, 500, 502, 503, 504, 529).
bool is_retryable_status(int32_t status);

} // namespace troupe
