#pragma once
// What `troupe ls` shows of a session: <session>/session.json, written by the session at its
// start, after every turn and at its end.

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "protocol/model.hpp"

namespace troupe {

struct session_info {
  std::string id;
  /// A few words naming the session: from the namer (source "model"), /rename ("user") or the
  /// first prompt ("prompt"); empty until one of them gives it.
  std::string name;
  std::string name_source;
  /// The workspace it runs in (`--continue` picks the newest session of a directory).
  std::string cwd;
  std::string model;
  /// "running" while it runs, then its terminal state ("completed", "interrupted", …).
  std::string state = "running";
  int64_t created_ms = 0;
  int64_t updated_ms = 0;
  int64_t turns = 0;
  int64_t steps = 0;
  /// This agent's own usage over all its runs; its subagents' is in their own session.json.
  token_usage usage;
  /// What this agent and its subagents cost, in US dollars; `cost_known` is false when a
  /// model's price is not in the table.
  double cost_usd = 0;
  bool cost_known = true;
  /// The first prompt, cut to 200 bytes.
  std::string first_prompt;
  /// The session this one was forked from (`--fork`), if any.
  std::string forked_from;
  /// False for a run with --no-session-persistence: its directory goes when it ends, and one a
  /// killed run left behind is never listed and is removed once nothing runs it.
  bool persist = true;
  /// --mcp-config's servers, merged ({"mcpServers": {…}} as JSON text; empty: none given), and
  /// --strict-mcp-config. Kept for MCP support to come.
  std::string mcp_config;
  bool strict_mcp_config = false;
  /// A subagent launched with a `subagent_type`: that type's name (a resume keeps it).
  std::string agent_type;
};

void to_json(nlohmann::json& j, const session_info& x);
void from_json(const nlohmann::json& j, session_info& x);

} // namespace troupe
