// Both SSE decoders (OpenAI chunks, Anthropic events) and the whole-body and error parsers, on
// bytes that arrive in chunks of any size.

#include "fuzz/targets.hpp"
#include "protocol/bounded_json.hpp"
#include "providers/provider.hpp"

namespace troupe::fuzz {

namespace {

void use(const model_reply& reply) {
  fuzz_check(reply.ok() || !reply.error_message.empty(), "an error reply says what went wrong");
  auto copy = reply;
  nlohmann::json j = copy;
  auto text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  fuzz_check(static_cast<bool>(parse_json_bounded(text, max_record_depth)),
             "a reply's JSON reads back within the record depth");
}

int decode(provider_kind kind, const uint8_t* data, size_t size) {
  if (size == 0)
    return 0;
  // The first byte picks the chunk size: streams are split anywhere, even inside a UTF-8
  // character or a CRLF.
  size_t step = 1 + data[0] % 97;
  std::string_view body{reinterpret_cast<const char*>(data) + 1, size - 1};
  auto decoder = make_stream_decoder(kind);
  for (size_t pos = 0; pos < body.size(); pos += step)
    decoder->feed(body.substr(pos, step));
  use(decoder->finish());
  use(parse_reply(kind, body));
  auto error = parse_error(kind, 400 + data[0] % 200, body);
  fuzz_check(!error.ok(), "an error status is an error reply");
  use(error);
  return 0;
}

} // namespace

int sse_openai(const uint8_t* data, size_t size) {
  return decode(provider_kind::openai, data, size);
}

int sse_anthropic(const uint8_t* data, size_t size) {
  return decode(provider_kind::anthropic, data, size);
}

} // namespace troupe::fuzz
