#include "providers/scripted_script.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "protocol/bounded_json.hpp"

namespace troupe {

namespace {

expected<scripted_reply> parse_line(const nlohmann::json& j, size_t line) {
  if (!j.is_object())
    return failure{"expected a JSON object"};
  static const char* known[] = {"text", "tool_calls", "stop_reason", "error", "delay_ms", "usage"};
  for (auto& [key, value] : j.items())
    if (std::find(std::begin(known), std::end(known), key) == std::end(known))
      return failure{"unknown key '" + key + "' (allowed: text, tool_calls, stop_reason, "
                     "error, delay_ms, usage)"};
  scripted_reply reply;
  reply.line = line;
  try {
    reply.text = j.value("text", std::string{});
    reply.stop_reason = j.value("stop_reason", std::string{"end_turn"});
    reply.delay_ms = j.value("delay_ms", int64_t{0});
    if (reply.delay_ms < 0)
      return failure{"delay_ms must not be negative"};
    if (auto calls = j.find("tool_calls"); calls != j.end()) {
      if (!calls->is_array())
        return failure{"tool_calls must be an array"};
      for (auto& c : *calls) {
        if (!c.is_object() || !c.contains("name") || !c["name"].is_string())
          return failure{"each tool call needs a \"name\" string"};
        tool_call call;
        call.id = c.value("id", std::string{});
        call.name = c["name"].get<std::string>();
        call.input = c.value("input", nlohmann::json::object());
        call.format = call_format::native;
        reply.tool_calls.push_back(std::move(call));
      }
    }
    if (auto error = j.find("error"); error != j.end()) {
      if (!error->is_object() || !error->contains("status"))
        return failure{"error needs {\"status\": N, \"message\": \"...\"}"};
      reply.error_status = error->at("status").get<int32_t>();
      reply.error_message = error->value("message", std::string{"scripted error"});
    }
    if (auto usage = j.find("usage"); usage != j.end())
      usage->get_to(reply.usage);
  } catch (const nlohmann::json::exception& e) {
    return failure{std::string{"wrong type: "} + e.what()};
  }
  return reply;
}

} // namespace

expected<script> parse_script(std::string_view text, const std::string& source) {
  script result;
  result.source = source;
  size_t line_number = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos)
      end = text.size();
    auto line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos)
      continue;
    auto parsed = parse_json_bounded(line);
    if (!parsed)
      return failure{source + " line " + std::to_string(line_number) + ": " + parsed.error() +
                     "; each line must be one JSON object"};
    auto reply = parse_line(*parsed, line_number);
    if (!reply)
      return failure{source + " line " + std::to_string(line_number) + ": " + reply.error()};
    result.replies.push_back(std::move(*reply));
  }
  if (result.replies.empty())
    return failure{source + " holds no replies: write one JSON object per line, "
                            "e.g. {\"text\": \"hello\"}"};
  return result;
}

expected<script> load_script(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return failure{"cannot read script " + path.string() + ": no such file"};
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return failure{"cannot read script " + path.string() + ": permission denied"};
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_script(buffer.str(), path.string());
}

model_reply to_model_reply(const scripted_reply& line) {
  model_reply reply;
  if (line.error_status != 0) {
    reply.error = error_kind_for_status(line.error_status);
    reply.error_status = line.error_status;
    reply.error_message = line.error_message;
    return reply;
  }
  reply.assistant.role = role::assistant;
  reply.assistant.content = line.text;
  reply.assistant.tool_calls = line.tool_calls;
  reply.stop_reason = line.stop_reason;
  reply.usage = line.usage;
  return reply;
}

} // namespace troupe
