#include "protocol/supervisor.hpp"

#include <nlohmann/json.hpp>

namespace troupe {

const char* agent_status(const std::string& reason) {
  if (reason == "completed" || reason == "backgrounded")
    return "completed";
  if (reason == "interrupted")
    return "stopped";
  return "failed";
}

void to_json(nlohmann::json& j, const agent_descriptor& x) {
  j = {{"agent_id", x.id},         {"description", x.description}, {"state", x.state},
       {"reason", x.reason}, {"error", x.error},             {"foreground", x.foreground},
       {"usage", x.usage},   {"cost_usd", x.cost_usd}};
}

void from_json(const nlohmann::json& j, agent_descriptor& x) {
  x = agent_descriptor{};
  x.id = j.value("agent_id", std::string{});
  x.description = j.value("description", std::string{});
  x.state = j.value("state", std::string{});
  x.reason = j.value("reason", std::string{});
  x.error = j.value("error", std::string{});
  x.foreground = j.value("foreground", false);
  if (auto u = j.find("usage"); u != j.end() && u->is_object())
    u->get_to(x.usage);
  x.cost_usd = j.value("cost_usd", 0.0);
}

} // namespace troupe
