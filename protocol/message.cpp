#include "protocol/message.hpp"

#include "protocol/bounded_json.hpp"
#include "protocol/json_enum.hpp"

namespace troupe {

namespace {

constexpr detail::enum_names<role, 4> role_names{{
  {role::system, "system"},
  {role::user, "user"},
  {role::assistant, "assistant"},
  {role::tool, "tool"},
}};

constexpr detail::enum_names<call_format, 3> call_format_names{{
  {call_format::native, "native"},
  {call_format::markdown, "markdown"},
  {call_format::xml, "xml"},
}};

constexpr detail::enum_names<message_origin, 20> origin_names{{
  {message_origin::none, ""},
  {message_origin::prompt, "prompt"},
  {message_origin::parent, "parent"},
  {message_origin::task_notification, "task-notification"},
  {message_origin::hook, "hook"},
  {message_origin::hook_blocked, "hook_blocked"},
  {message_origin::interrupt, "interrupt"},
  {message_origin::declined, "declined"},
  {message_origin::error, "error"},
  {message_origin::max_output, "max_output"},
  {message_origin::max_steps, "max_steps"},
  {message_origin::model, "model"},
  {message_origin::namer, "namer"},
  {message_origin::undo, "undo"},
  {message_origin::clear, "clear"},
  {message_origin::compaction, "compaction"},
  {message_origin::compact_boundary, "compact_boundary"},
  {message_origin::compact_summary, "compact_summary"},
  {message_origin::continuation, "continuation"},
  {message_origin::other, "other"},
}};

constexpr detail::enum_names<refusal, 6> refusal_names{{
  {refusal::none, ""},
  {refusal::permission, "permission"},
  {refusal::plan_mode, "plan_mode"},
  {refusal::user, "user"},
  {refusal::hook, "hook"},
  {refusal::other, "other"},
}};

// Refusals are left out when there is none: transcripts written before the field load as
// "ran", and a spelling from a newer version loads as `other` rather than failing the line.
void read_refusal(const nlohmann::json& j, refusal& out) {
  if (auto i = j.find("refused"); i != j.end() && i->is_string())
    out = refusal_from_string(i->get_ref<const std::string&>());
}

template <class T>
void read_optional(const nlohmann::json& j, const char* key, T& out) {
  if (auto i = j.find(key); i != j.end() && !i->is_null())
    out = value_at(j, key, out);
}

} // namespace

const char* to_string(role r) { return detail::enum_to_name(role_names, r); }

const char* to_string(message_origin o) { return detail::enum_to_name(origin_names, o); }

message_origin origin_from_string(std::string_view spelling) {
  return detail::enum_from_name(origin_names, spelling).value_or(message_origin::other);
}

const char* to_string(refusal r) { return detail::enum_to_name(refusal_names, r); }

refusal refusal_from_string(std::string_view spelling) {
  return detail::enum_from_name(refusal_names, spelling).value_or(refusal::other);
}

message make_tool_message(const tool_call& call, const tool_result& result) {
  message m;
  m.role = role::tool;
  m.content = result.output;
  m.tool_call_id = call.id;
  m.tool_name = call.name;
  m.is_error = result.is_error;
  m.exit_code = result.exit_code;
  m.truncated = result.truncated;
  m.refused = result.refused;
  return m;
}

void to_json(nlohmann::json& j, const tool_call& x) {
  j = {{"id", x.id},
       {"name", x.name},
       {"input", x.input},
       {"format", detail::enum_to_name(call_format_names, x.format)}};
}

void from_json(const nlohmann::json& j, tool_call& x) {
  x = tool_call{};
  read_optional(j, "id", x.id);
  j.at("name").get_to(x.name);
  read_optional(j, "input", x.input);
  if (auto i = j.find("format"); i != j.end())
    x.format = detail::enum_from_json(call_format_names, *i, "tool call format");
}

void to_json(nlohmann::json& j, const tool_result& x) {
  j = {{"output", x.output},
       {"is_error", x.is_error},
       {"exit_code", x.exit_code},
       {"truncated", x.truncated}};
  if (x.refused != refusal::none)
    j["refused"] = to_string(x.refused);
}

void from_json(const nlohmann::json& j, tool_result& x) {
  x = tool_result{};
  read_optional(j, "output", x.output);
  read_optional(j, "is_error", x.is_error);
  read_optional(j, "exit_code", x.exit_code);
  read_optional(j, "truncated", x.truncated);
  read_refusal(j, x.refused);
}

// Empty fields are left out so transcript lines stay short; from_json restores the defaults.
void to_json(nlohmann::json& j, const message& x) {
  j = nlohmann::json::object();
  j["id"] = x.id;
  j["role"] = to_string(x.role);
  j["content"] = x.content;
  if (!x.tool_calls.empty())
    j["tool_calls"] = x.tool_calls;
  if (x.role == role::tool) {
    j["tool_call_id"] = x.tool_call_id;
    j["tool_name"] = x.tool_name;
    j["is_error"] = x.is_error;
    j["exit_code"] = x.exit_code;
    j["truncated"] = x.truncated;
    if (x.refused != refusal::none)
      j["refused"] = to_string(x.refused);
  }
  if (x.origin != message_origin::none)
    j["origin"] = to_string(x.origin);
  j["timestamp_ms"] = x.timestamp_ms;
  if (!x.meta.is_null())
    j["meta"] = x.meta;
}

void from_json(const nlohmann::json& j, message& x) {
  x = message{};
  read_optional(j, "id", x.id);
  x.role = detail::enum_from_json(role_names, j.at("role"), "role");
  read_optional(j, "content", x.content);
  read_optional(j, "tool_calls", x.tool_calls);
  read_optional(j, "tool_call_id", x.tool_call_id);
  read_optional(j, "tool_name", x.tool_name);
  read_optional(j, "is_error", x.is_error);
  read_optional(j, "exit_code", x.exit_code);
  read_optional(j, "truncated", x.truncated);
  read_refusal(j, x.refused);
  if (auto i = j.find("origin"); i != j.end() && i->is_string())
    x.origin = origin_from_string(i->get_ref<const std::string&>());
  read_optional(j, "timestamp_ms", x.timestamp_ms);
  if (auto i = j.find("meta"); i != j.end())
    x.meta = *i;
}

} // namespace troupe
