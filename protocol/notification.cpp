#include "protocol/notification.hpp"

#include <nlohmann/json.hpp>

#include "protocol/bounded_json.hpp"

namespace troupe {

std::string notification_text(const task_notification& n) {
  if (n.source == "external")
    return "<task-notification>\n<source>external</source>\n<message>\n" + n.text +
           "\n</message>\n</task-notification>";
  std::string kind = n.source == "agent" ? "agent" : "task";
  std::string out = "<task-notification>\n<" + kind + "-id>" + n.task_id + "</" + kind +
                    "-id>\n<status>" + n.status + "</status>\n";
  if (!n.reason.empty() && n.reason != "completed" && n.reason != "backgrounded")
    out += "<reason>" + n.reason + "</reason>\n";
  if (!n.description.empty())
    out += "<description>" + n.description + "</description>\n";
  out += "<result>\n" + n.text + "\n</result>\n";
  if (n.usage.input_tokens + n.usage.output_tokens > 0)
    out += "<usage>input_tokens: " + std::to_string(n.usage.input_tokens) +
           ", output_tokens: " + std::to_string(n.usage.output_tokens) + "</usage>\n";
  return out + "</task-notification>";
}

std::string notification_summary(const task_notification& n) {
  std::string kind = n.source == "agent" ? "agent" : "task";
  auto out = "<task-notification><" + kind + "-id>" + n.task_id + "</" + kind + "-id><status>" +
             n.status + "</status>";
  if (!n.reason.empty() && n.reason != "completed" && n.reason != "backgrounded")
    out += "<reason>" + n.reason + "</reason>";
  if (!n.description.empty())
    out += "<description>" + n.description + "</description>";
  return out + "<result>" + std::to_string(n.text.size()) +
         " bytes, not shown (many results arrived at once): read it with task_output " +
         n.task_id + "</result></task-notification>";
}

void to_json(nlohmann::json& j, const task_notification& x) {
  j = {{"id", x.id},         {"source", x.source},           {"task_id", x.task_id},
       {"status", x.status}, {"description", x.description}, {"text", x.text},
       {"usage", x.usage},   {"cost_usd", x.cost_usd},       {"urgent", x.urgent},
       {"sent_at_us", x.sent_at_us}};
  if (!x.reason.empty())
    j["reason"] = x.reason;
  if (!x.error.empty())
    j["error"] = x.error;
}

void from_json(const nlohmann::json& j, task_notification& x) {
  x = task_notification{};
  x.id = j.value("id", std::string{});
  x.source = j.value("source", std::string{"external"});
  x.task_id = j.value("task_id", std::string{});
  x.status = j.value("status", std::string{});
  x.reason = j.value("reason", std::string{});
  x.error = j.value("error", std::string{});
  x.description = j.value("description", std::string{});
  x.text = j.value("text", std::string{});
  if (auto u = j.find("usage"); u != j.end() && u->is_object())
    u->get_to(x.usage);
  x.cost_usd = j.value("cost_usd", 0.0);
  x.urgent = j.value("urgent", false);
  x.sent_at_us = value_at(j, "sent_at_us", int64_t{0});
}

} // namespace troupe
