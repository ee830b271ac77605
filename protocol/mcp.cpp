#include "protocol/mcp.hpp"

#include "protocol/json_enum.hpp"

namespace troupe {

namespace {

constexpr detail::enum_names<mcp_status, 3> status_names{{
  {mcp_status::pending, "pending"},
  {mcp_status::connected, "connected"},
  {mcp_status::failed, "failed"},
}};

std::string name_part(const std::string& text) {
  std::string part = text;
  for (auto& c : part)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          c == '_' || c == '-'))
      c = '_';
  return part;
}

} // namespace

const char* to_string(mcp_status s) { return detail::enum_to_name(status_names, s); }

std::string mcp_tool_name(const std::string& server, const std::string& tool) {
  // The providers take at most 64 characters (^[a-zA-Z0-9_-]{1,64}$): one longer name would
  // fail every request. Two names alike in their first 64 are one to the model (the server
  // offers the first).
  auto name = "mcp__" + name_part(server) + "__" + name_part(tool);
  if (name.size() > 64)
    name.resize(64);
  return name;
}

std::string mcp_server_of(const std::string& tool_name) {
  constexpr std::string_view prefix = "mcp__";
  if (tool_name.compare(0, prefix.size(), prefix) != 0)
    return {};
  auto end = tool_name.find("__", prefix.size());
  if (end == std::string::npos)
    return tool_name.substr(prefix.size()); // "mcp__fs": the server itself (a rule's form)
  return tool_name.substr(prefix.size(), end - prefix.size());
}

} // namespace troupe
