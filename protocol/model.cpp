#include "protocol/model.hpp"

#include "protocol/bounded_json.hpp"
#include "protocol/json_enum.hpp"

namespace troupe {

namespace {

constexpr detail::enum_names<model_error_kind, 8> error_names{{
  {model_error_kind::none, "none"},
  {model_error_kind::rate_limited, "rate_limited"},
  {model_error_kind::server, "server"},
  {model_error_kind::request, "request"},
  {model_error_kind::prompt_too_long, "prompt_too_long"},
  {model_error_kind::transport, "transport"},
  {model_error_kind::script, "script"},
  {model_error_kind::interrupted, "interrupted"},
}};

} // namespace

token_usage& token_usage::operator+=(const token_usage& other) {
  input_tokens += other.input_tokens;
  output_tokens += other.output_tokens;
  cache_read_tokens += other.cache_read_tokens;
  cache_write_tokens += other.cache_write_tokens;
  return *this;
}

const char* to_string(model_error_kind k) { return detail::enum_to_name(error_names, k); }

void to_json(nlohmann::json& j, const token_usage& x) {
  j = {{"input_tokens", x.input_tokens},
       {"output_tokens", x.output_tokens},
       {"cache_read_input_tokens", x.cache_read_tokens},
       {"cache_creation_input_tokens", x.cache_write_tokens}};
}

void from_json(const nlohmann::json& j, token_usage& x) {
  x = token_usage{};
  x.input_tokens = value_at(j, "input_tokens", int64_t{0});
  x.output_tokens = value_at(j, "output_tokens", int64_t{0});
  x.cache_read_tokens = value_at(j, "cache_read_input_tokens", int64_t{0});
  x.cache_write_tokens = value_at(j, "cache_creation_input_tokens", int64_t{0});
}

void to_json(nlohmann::json& j, const tool_descriptor& x) {
  j = {{"name", x.name}, {"description", x.description}, {"input_schema", x.input_schema}};
}

void from_json(const nlohmann::json& j, tool_descriptor& x) {
  j.at("name").get_to(x.name);
  j.at("description").get_to(x.description);
  j.at("input_schema").get_to(x.input_schema);
}

void to_json(nlohmann::json& j, const model_error_kind& x) { j = to_string(x); }

void from_json(const nlohmann::json& j, model_error_kind& x) {
  x = detail::enum_from_json(error_names, j, "model error kind");
}

void to_json(nlohmann::json& j, const model_reply& x) {
  j = {{"assistant", x.assistant},
       {"stop_reason", x.stop_reason},
       {"usage", x.usage},
       {"error", x.error},
       {"error_status", x.error_status},
       {"error_message", x.error_message}};
}

void from_json(const nlohmann::json& j, model_reply& x) {
  j.at("assistant").get_to(x.assistant);
  j.at("stop_reason").get_to(x.stop_reason);
  j.at("usage").get_to(x.usage);
  j.at("error").get_to(x.error);
  j.at("error_status").get_to(x.error_status);
  j.at("error_message").get_to(x.error_message);
}

} // namespace troupe
