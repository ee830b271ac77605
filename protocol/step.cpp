#include "protocol/step.hpp"

namespace troupe {

void to_json(nlohmann::json& j, const permission_denial& x) {
  j = {{"tool_name", x.tool_name},
       {"tool_use_id", x.tool_call_id},
       {"tool_input", x.tool_input},
       {"reason", x.reason},
       {"cause", x.cause}};
}

void from_json(const nlohmann::json& j, permission_denial& x) {
  j.at("tool_name").get_to(x.tool_name);
  j.at("tool_use_id").get_to(x.tool_call_id);
  x.tool_input = j.at("tool_input");
  j.at("reason").get_to(x.reason);
  // Written before plan-mode refusals were told apart: every one was a refusal.
  x.cause = j.contains("cause") ? j.at("cause").get<denial_cause>() : denial_cause::refused;
}

} // namespace troupe
