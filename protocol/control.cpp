#include "protocol/control.hpp"

#include "protocol/json_enum.hpp"

namespace troupe {

namespace {

constexpr detail::enum_names<control_command, 13> command_names{{
  {control_command::poke, "poke"},
  {control_command::urgent, "urgent"},
  {control_command::interrupt, "interrupt"},
  {control_command::detach, "detach"},
  {control_command::input, "input"},
  {control_command::background, "background"},
  {control_command::interrupt_agent, "interrupt-agent"},
  {control_command::notify_agent, "notify-agent"},
  {control_command::end_input, "end-input"},
  {control_command::permission_mode, "permission-mode"},
  {control_command::model, "model"},
  {control_command::stop_task, "stop-task"},
  {control_command::context_usage, "context-usage"},
}};

constexpr const char* error_prefix = "error: ";
constexpr const char* refused_prefix = "refused: ";

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

} // namespace

const char* to_string(control_command c) { return detail::enum_to_name(command_names, c); }

expected<control_command> parse_control_command(const std::string& name) {
  for (auto& [value, spelling] : command_names)
    if (name == spelling)
      return value;
  std::string known;
  for (auto& [value, spelling] : command_names)
    known += (known.empty() ? "" : ", ") + std::string{spelling};
  return failure{"unknown control command '" + name + "'; known: " + known};
}

void to_json(nlohmann::json& j, const control_command& x) { j = to_string(x); }

void from_json(const nlohmann::json& j, control_command& x) {
  x = detail::enum_from_json(command_names, j, "control command");
}

control_reply control_ok(std::string text) { return {control_status::ok, std::move(text)}; }

control_reply control_error(std::string text) {
  return {control_status::error, std::move(text)};
}

std::string to_line(const control_reply& r) {
  switch (r.status) {
    case control_status::ok:
      return r.text;
    case control_status::error:
      return error_prefix + r.text;
    case control_status::refused:
      return refused_prefix + r.text;
  }
  return r.text;
}

control_reply parse_control_reply(const std::string& line) {
  if (starts_with(line, error_prefix))
    return {control_status::error, line.substr(std::string{error_prefix}.size())};
  if (starts_with(line, refused_prefix))
    return {control_status::refused, line.substr(std::string{refused_prefix}.size())};
  return control_ok(line);
}

} // namespace troupe
