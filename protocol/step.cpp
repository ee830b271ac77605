#include "protocol/step.hpp"

namespace troupe {

void to_json(nlohmann::json& j, const permission_denial& x) {
  j = {{"tool_name", x.tool_name},
       {"tool_use_id", x.tool_call_id},
       {"tool_input", x.tool_input},
       {"reason", x.reason}};
}

void from_json(const nlohmann::json& j, permission_denial& x) {
  j.at("tool_name").get_to(x.tool_name);
  j.at("tool_use_id").get_to(x.tool_call_id);
  x.tool_input = j.at("tool_input");
  j.at("reason").get_to(x.reason);
}

} // namespace troupe
