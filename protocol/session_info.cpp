#include "protocol/session_info.hpp"

#include <nlohmann/json.hpp>

#include "protocol/bounded_json.hpp"

namespace troupe {

void to_json(nlohmann::json& j, const session_info& x) {
  j = {{"id", x.id},
       {"name", x.name},
       {"name_source", x.name_source},
       {"cwd", x.cwd},
       {"model", x.model},
       {"state", x.state},
       {"created_ms", x.created_ms},
       {"updated_ms", x.updated_ms},
       {"turns", x.turns},
       {"steps", x.steps},
       {"usage", x.usage},
       {"cost_usd", x.cost_usd},
       {"cost_known", x.cost_known},
       {"first_prompt", x.first_prompt},
       {"forked_from", x.forked_from}};
  // Written only when set: the session.json of an ordinary session stays as it was.
  if (!x.persist)
    j["persist"] = false;
  if (!x.mcp_config.empty())
    if (auto config = parse_json_bounded(x.mcp_config); config)
      j["mcp_config"] = std::move(*config);
  if (x.strict_mcp_config)
    j["strict_mcp_config"] = true;
  if (!x.agent_type.empty())
    j["agent_type"] = x.agent_type;
}

// Lenient: a field that is missing keeps its default, so older files still read.
void from_json(const nlohmann::json& j, session_info& x) {
  x = session_info{};
  x.id = j.value("id", std::string{});
  x.name = j.value("name", std::string{});
  x.name_source = j.value("name_source", std::string{});
  x.cwd = j.value("cwd", std::string{});
  x.model = j.value("model", std::string{});
  x.state = j.value("state", std::string{"running"});
  x.created_ms = j.value("created_ms", int64_t{0});
  x.updated_ms = j.value("updated_ms", int64_t{0});
  x.turns = j.value("turns", int64_t{0});
  x.steps = j.value("steps", int64_t{0});
  if (auto u = j.find("usage"); u != j.end() && u->is_object())
    u->get_to(x.usage);
  x.cost_usd = j.value("cost_usd", 0.0);
  x.cost_known = j.value("cost_known", true);
  x.first_prompt = j.value("first_prompt", std::string{});
  x.forked_from = j.value("forked_from", std::string{});
  x.persist = j.value("persist", true);
  if (auto config = j.find("mcp_config"); config != j.end() && config->is_object())
    x.mcp_config = config->dump();
  x.strict_mcp_config = j.value("strict_mcp_config", false);
  if (auto type = j.find("agent_type"); type != j.end() && type->is_string())
    x.agent_type = type->get<std::string>();
}

} // namespace troupe
