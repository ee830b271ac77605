#pragma once
// The control sub-protocol: the commands a session (and its agent supervisor) takes from other
// processes and from the agents around it, and their typed replies. Names are parsed at the edge
// (the control socket's request line); actors see only the enum.

#include <cstdint>
#include <string>

#include <caf/meta/type_name.hpp>
#include <nlohmann/json.hpp>

#include "protocol/expected.hpp"

namespace troupe {

/// A control command. Each has one wire spelling (to_string), the `command` of a request line.
enum class control_command : uint8_t {
  poke,            ///< "poke": read the durable queue
  urgent,          ///< "urgent": read the durable queue (an urgent notification is in it)
  interrupt,       ///< "interrupt": interrupt the step in flight
  detach,          ///< "detach": the parent ended and lets this agent finish on its own
  input,           ///< "input" PROMPT: a parent resuming a running agent queues a prompt
  background,      ///< "background" AGENT_ID or agents/X/…: move a foreground agent back
  interrupt_agent, ///< "interrupt-agent" agents/X[/agents/Y…]: interrupt an agent below
  notify_agent,    ///< "notify-agent": reserved for notifying an agent below
  end_input,       ///< "end-input": no more input comes; end once the queue is done
  permission_mode, ///< "permission-mode" MODE: the permission mode from the next call on
  model,           ///< "model" SPEC: switch models (at once when idle, else after the turn)
  stop_task,       ///< "stop-task" ID: stop a background agent or shell task
  context_usage,   ///< "context-usage": the context's size and window, as a JSON object
};

/// Returns the wire spelling of a command ("poke", "interrupt-agent", …).
const char* to_string(control_command c);

/// Parses a command's wire spelling; an unknown name is an error that lists the known ones.
expected<control_command> parse_control_command(const std::string& name);

void to_json(nlohmann::json& j, const control_command& x);
void from_json(const nlohmann::json& j, control_command& x);

/// How a control command went.
enum class control_status : uint8_t {
  ok,      ///< done (or nothing to do); the text says what happened
  error,   ///< not done; the text says why (the wire line starts "error: ")
  refused, ///< the endpoint refused the peer (the wire line starts "refused: ")
};

/// The answer to a control command: its status and one line for people.
struct control_reply {
  control_status status = control_status::ok;
  std::string text;

  friend bool operator==(const control_reply& a, const control_reply& b) {
    return a.status == b.status && a.text == b.text;
  }
  friend bool operator!=(const control_reply& a, const control_reply& b) { return !(a == b); }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, control_reply& x) {
  return f(caf::meta::type_name("control_reply"), x.status, x.text);
}

/// Makes an ok reply.
control_reply control_ok(std::string text);

/// Makes an error reply.
control_reply control_error(std::string text);

/// Returns the reply as the control socket's answer line (without its newline): the text, with
/// "error: " or "refused: " in front unless it is ok.
std::string to_line(const control_reply& r);

/// Reads an answer line (without its newline) back into a reply: the inverse of to_line.
control_reply parse_control_reply(const std::string& line);

} // namespace troupe
