#include "actors/agent.hpp"

#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include "actors/disk_io.hpp"
#include "actors/tool_executor.hpp"

namespace troupe {

session_actor spawn_agent(caf::actor_system& sys, session_config session, tool_context tools,
                          model_client_actor model) {
  if (!session.disk)
    session.disk = spawn_disk_io(sys);
  // The search tools leave out what a read deny rule forbids (the policy is immutable).
  if (session.permissions && !tools.read_denied)
    tools.read_denied = [policy = session.permissions](const std::filesystem::path& path) {
      return policy->read_denial(path);
    };
  // The session's processes get its own variables, whichever unit starts them.
  for (auto& [name, value] : session.process_environment)
    tools.environment.emplace(name, value);
  auto executor = spawn_tool_executor(sys, session.registry, std::move(tools), session.disk,
                                      session.mcp_servers, session.owned_mcp_servers);
  auto agent = spawn_session(sys, std::move(session), std::move(model), executor);
  caf::anon_send(executor, subscribe_atom::value, agent);
  return agent;
}

} // namespace troupe
