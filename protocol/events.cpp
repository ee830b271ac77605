#include "protocol/events.hpp"

#include <nlohmann/json.hpp>

namespace troupe {

void to_json(nlohmann::json& j, const generation_progress& x) {
  j = {{"event", "progress"},
       {"session_id", x.session_id},
       {"kind", x.kind == progress_kind::text_delta ? "text_delta" : "api_retry"},
       {"text", x.text},
       {"attempt", x.attempt},
       {"max_retries", x.max_retries},
       {"delay_ms", x.delay_ms},
       {"status", x.status},
       {"error", x.error}};
}

void from_json(const nlohmann::json& j, generation_progress& x) {
  j.at("session_id").get_to(x.session_id);
  auto kind = j.at("kind").get<std::string>();
  if (kind != "text_delta" && kind != "api_retry")
    throw nlohmann::json::other_error::create(501, "unknown progress kind '" + kind + "'", &j);
  x.kind = kind == "text_delta" ? progress_kind::text_delta : progress_kind::api_retry;
  j.at("text").get_to(x.text);
  j.at("attempt").get_to(x.attempt);
  j.at("max_retries").get_to(x.max_retries);
  j.at("delay_ms").get_to(x.delay_ms);
  j.at("status").get_to(x.status);
  j.at("error").get_to(x.error);
}

void to_json(nlohmann::json& j, const session_started_event& x) {
  j = {{"event", "session_started"},       {"session_id", x.session_id},
       {"cwd", x.cwd},                     {"model", x.model},
       {"tools", x.tools},                 {"transcript_path", x.transcript_path},
       {"loaded_messages", x.loaded_messages}};
}

void from_json(const nlohmann::json& j, session_started_event& x) {
  j.at("session_id").get_to(x.session_id);
  j.at("cwd").get_to(x.cwd);
  j.at("model").get_to(x.model);
  j.at("tools").get_to(x.tools);
  j.at("transcript_path").get_to(x.transcript_path);
  j.at("loaded_messages").get_to(x.loaded_messages);
}

void to_json(nlohmann::json& j, const message_event& x) {
  j = {{"event", "message"}, {"session_id", x.session_id}, {"message", x.msg}};
  if (!x.parent_tool_use_id.empty())
    j["parent_tool_use_id"] = x.parent_tool_use_id;
}

void from_json(const nlohmann::json& j, message_event& x) {
  j.at("session_id").get_to(x.session_id);
  j.at("message").get_to(x.msg);
  x.parent_tool_use_id = j.value("parent_tool_use_id", std::string{});
}

void to_json(nlohmann::json& j, const notice_event& x) {
  j = {{"event", "notice"}, {"session_id", x.session_id}, {"kind", x.kind}, {"text", x.text}};
}

void from_json(const nlohmann::json& j, notice_event& x) {
  j.at("session_id").get_to(x.session_id);
  j.at("kind").get_to(x.kind);
  j.at("text").get_to(x.text);
}

void to_json(nlohmann::json& j, const session_ended_event& x) {
  j = {{"event", "session_ended"},   {"session_id", x.session_id},
       {"reason", x.reason},         {"error_message", x.error_message},
       {"error_kind", x.error_kind},
       {"result_text", x.result_text}, {"state", x.state},
       {"usage", x.usage},           {"cost_usd", x.cost_usd}, {"total_usage", x.total_usage},
       {"total_cost_usd", x.total_cost_usd}, {"cost_known", x.cost_known},
       {"duration_ms", x.duration_ms}, {"permission_denials", x.permission_denials}};
  if (!x.agents_left.empty())
    j["agents_left"] = x.agents_left;
  j["api_duration_ms"] = x.api_duration_ms;
  j["model"] = x.model;
  j["turn_reported"] = x.turn_reported;
}

void from_json(const nlohmann::json& j, session_ended_event& x) {
  j.at("session_id").get_to(x.session_id);
  j.at("reason").get_to(x.reason);
  j.at("error_message").get_to(x.error_message);
  j.at("error_kind").get_to(x.error_kind);
  j.at("result_text").get_to(x.result_text);
  j.at("state").get_to(x.state);
  j.at("usage").get_to(x.usage);
  if (auto total = j.find("total_usage"); total != j.end())
    total->get_to(x.total_usage);
  x.cost_usd = j.value("cost_usd", 0.0);
  x.total_cost_usd = j.value("total_cost_usd", 0.0);
  x.cost_known = j.value("cost_known", true);
  j.at("duration_ms").get_to(x.duration_ms);
  if (auto denials = j.find("permission_denials"); denials != j.end())
    denials->get_to(x.permission_denials);
  if (auto left = j.find("agents_left"); left != j.end() && left->is_array())
    left->get_to(x.agents_left);
  x.api_duration_ms = j.value("api_duration_ms", int64_t{0});
  x.model = j.value("model", std::string{});
  x.turn_reported = j.value("turn_reported", false);
}

void to_json(nlohmann::json& j, const session_status_event& x) {
  j = {{"event", "status"},          {"session_id", x.session_id},
       {"busy", x.busy},             {"model", x.model},
       {"name", x.name},             {"turn_count", x.turn_count},
       {"usage", x.usage},           {"cost_usd", x.cost_usd},
       {"cost_known", x.cost_known}, {"context_tokens", x.context_tokens},
       {"context_window", x.context_window}, {"background", x.background}};
}

void from_json(const nlohmann::json& j, session_status_event& x) {
  x = session_status_event{};
  x.session_id = j.value("session_id", std::string{});
  x.busy = j.value("busy", false);
  x.model = j.value("model", std::string{});
  x.name = j.value("name", std::string{});
  x.turn_count = j.value("turn_count", int64_t{0});
  if (auto u = j.find("usage"); u != j.end())
    u->get_to(x.usage);
  x.cost_usd = j.value("cost_usd", 0.0);
  x.cost_known = j.value("cost_known", true);
  x.context_tokens = j.value("context_tokens", int64_t{0});
  x.context_window = j.value("context_window", int64_t{0});
  x.background = j.value("background", 0);
}

void to_json(nlohmann::json& j, const hook_run_event& x) {
  j = {{"event", "hook"},          {"session_id", x.session_id}, {"hook_id", x.hook_id},
       {"hook_event", x.event},    {"command", x.command},       {"finished", x.finished},
       {"exit_code", x.exit_code}, {"outcome", x.outcome},       {"stdout", x.stdout_text},
       {"stderr", x.stderr_text},  {"duration_ms", x.duration_ms}};
}

void from_json(const nlohmann::json& j, hook_run_event& x) {
  x = hook_run_event{};
  x.session_id = j.value("session_id", std::string{});
  x.hook_id = j.value("hook_id", std::string{});
  j.at("hook_event").get_to(x.event);
  x.command = j.value("command", std::string{});
  x.finished = j.value("finished", false);
  x.exit_code = j.value("exit_code", 0);
  x.outcome = j.value("outcome", std::string{});
  x.stdout_text = j.value("stdout", std::string{});
  x.stderr_text = j.value("stderr", std::string{});
  x.duration_ms = j.value("duration_ms", int64_t{0});
}

} // namespace troupe
