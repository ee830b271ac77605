#pragma once
// What a step asks of a model client and what it gets back.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>
#include <nlohmann/json.hpp>

#include "protocol/json_inspect.hpp"
#include "protocol/message.hpp"
#include "protocol/shared_value.hpp"

namespace troupe {

/// Tokens a model call consumed, as the provider reported them.
struct token_usage {
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  int64_t cache_read_tokens = 0;
  int64_t cache_write_tokens = 0;

  token_usage& operator+=(const token_usage& other);

  friend bool operator==(const token_usage& a, const token_usage& b) {
    return a.input_tokens == b.input_tokens && a.output_tokens == b.output_tokens &&
           a.cache_read_tokens == b.cache_read_tokens &&
           a.cache_write_tokens == b.cache_write_tokens;
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, token_usage& x) {
  return f(caf::meta::type_name("token_usage"), x.input_tokens, x.output_tokens,
           x.cache_read_tokens, x.cache_write_tokens);
}

/// A tool as the model sees it: the same spec feeds prompts and native `tools`.
struct tool_descriptor {
  std::string name;
  std::string description;
  nlohmann::json input_schema = nlohmann::json::object();
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tool_descriptor& x) {
  return f(caf::meta::type_name("tool_descriptor"), x.name, x.description, x.input_schema);
}

/// One generation request: the context since the last boundary plus the tools on offer.
/// The system prompt and the tools are shared: a thousand agents' requests hold one copy.
struct model_request {
  shared_value<std::string> system_prompt;
  context_snapshot context;
  shared_value<std::vector<tool_descriptor>> tools;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, model_request& x) {
  return f(caf::meta::type_name("model_request"), x.system_prompt, x.context, x.tools);
}

/// How a model call failed, if it did.
enum class model_error_kind : uint8_t {
  none,            ///< the call succeeded
  rate_limited,    ///< 429 and friends: retryable
  server,          ///< 5xx: retryable
  request,         ///< 4xx other than the above: the request itself is wrong
  prompt_too_long, ///< the context does not fit the model's window
  transport,       ///< connection or stream failure
  script,          ///< the scripted provider's script is exhausted or broken
  interrupted,     ///< the call was cancelled
};

/// Returns the wire name of a model error kind.
const char* to_string(model_error_kind k);

/// The model's answer to one request: an assistant message, or an error.
struct model_reply {
  message assistant;
  /// Provider stop reason, normalised: "end_turn", "tool_use", "max_tokens", …
  std::string stop_reason;
  token_usage usage;
  model_error_kind error = model_error_kind::none;
  int32_t error_status = 0;
  std::string error_message;

  bool ok() const { return error == model_error_kind::none; }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, model_reply& x) {
  return f(caf::meta::type_name("model_reply"), x.assistant, x.stop_reason, x.usage, x.error,
           x.error_status, x.error_message);
}

void to_json(nlohmann::json& j, const token_usage& x);
void from_json(const nlohmann::json& j, token_usage& x);
void to_json(nlohmann::json& j, const tool_descriptor& x);
void from_json(const nlohmann::json& j, tool_descriptor& x);
void to_json(nlohmann::json& j, const model_error_kind& x);
void from_json(const nlohmann::json& j, model_error_kind& x);
void to_json(nlohmann::json& j, const model_reply& x);
void from_json(const nlohmann::json& j, model_reply& x);

} // namespace troupe
