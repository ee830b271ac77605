#include "protocol/supervisor.hpp"

#include <nlohmann/json.hpp>

namespace troupe {

void to_json(nlohmann::json& j, const agent_descriptor& x) {
  j = {{"id", x.id},         {"description", x.description}, {"state", x.state},
       {"reason", x.reason}, {"error", x.error},             {"foreground", x.foreground},
       {"usage", x.usage},   {"cost_usd", x.cost_usd}};
}

} // namespace troupe
