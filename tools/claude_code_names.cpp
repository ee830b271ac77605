#include "tools/claude_code_names.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace troupe {

namespace {

struct tool_alias {
  std::string_view troupe;
  std::string_view claude;
};

// The first alias of a troupe tool is the name troupe gives it; the others are older or newer
// spellings Claude Code has used, accepted coming in.
constexpr std::array<tool_alias, 15> aliases = {{
  {"shell", "Bash"},
  {"read", "Read"},
  {"write", "Write"},
  {"edit", "Edit"},
  {"patch", "MultiEdit"},
  {"glob", "Glob"},
  {"grep", "Grep"},
  {"ls", "LS"},
  {"task", "Task"},
  {"task", "Agent"},
  {"todo", "TodoWrite"},
  {"task_output", "BashOutput"},
  {"task_output", "TaskOutput"},
  {"task_stop", "KillShell"},
  {"task_stop", "KillBash"},
}};

constexpr std::array<std::string_view, 14> troupe_names = {
  "shell", "read", "write",       "edit",      "patch",     "glob",    "grep",
  "ls",    "task", "todo",        "task_output", "task_stop", "task_wait", "complete"};

// Fields renamed one to one, per tool: troupe's name, then Claude Code's.
struct field_alias {
  std::string_view tool;
  std::string_view troupe;
  std::string_view claude;
};

constexpr std::array<field_alias, 6> fields = {{
  {"read", "path", "file_path"},
  {"write", "path", "file_path"},
  {"edit", "path", "file_path"},
  {"patch", "path", "file_path"},
  {"grep", "ignore_case", "-i"},
  {"grep", "context", "-C"},
}};

bool is_line_number(const nlohmann::json& value) {
  return value.is_number_integer() || value.is_number_unsigned();
}

} // namespace

std::string claude_tool_name(std::string_view troupe_name) {
  for (auto& alias : aliases)
    if (alias.troupe == troupe_name)
      return std::string{alias.claude};
  return std::string{troupe_name};
}

std::optional<std::string> troupe_tool_name(std::string_view name) {
  for (auto& alias : aliases)
    if (alias.claude == name)
      return std::string{alias.troupe};
  for (auto own : troupe_names)
    if (own == name)
      return std::string{own};
  return std::nullopt;
}

std::vector<std::string> claude_tool_names() {
  std::vector<std::string> names;
  for (auto& alias : aliases)
    names.emplace_back(alias.claude);
  return names;
}

nlohmann::json claude_tool_input(std::string_view troupe_name, const nlohmann::json& input) {
  if (!input.is_object())
    return input;
  auto out = input;
  for (auto& field : fields)
    if (field.tool == troupe_name)
      if (auto it = out.find(std::string{field.troupe}); it != out.end()) {
        auto value = std::move(*it);
        out.erase(it);
        out[std::string{field.claude}] = std::move(value);
      }
  if (troupe_name == "read") {
    // Claude Code reads `limit` lines from line `offset`; troupe from start_line to end_line.
    auto start = out.find("start_line");
    auto end = out.find("end_line");
    int64_t first = start != out.end() && is_line_number(*start) ? start->get<int64_t>() : 1;
    if (end != out.end() && is_line_number(*end)) {
      out["limit"] = std::max<int64_t>(0, end->get<int64_t>() - first + 1);
      out.erase("end_line");
    }
    if (start != out.end() && is_line_number(*start)) {
      out["offset"] = first;
      out.erase("start_line");
    }
  }
  return out;
}

nlohmann::json troupe_tool_input(std::string_view troupe_name, const nlohmann::json& input) {
  if (!input.is_object())
    return input;
  auto out = input;
  for (auto& field : fields)
    if (field.tool == troupe_name)
      if (auto it = out.find(std::string{field.claude}); it != out.end()) {
        auto value = std::move(*it);
        out.erase(it);
        out[std::string{field.troupe}] = std::move(value);
      }
  if (troupe_name == "read") {
    auto offset = out.find("offset");
    auto limit = out.find("limit");
    int64_t first = offset != out.end() && is_line_number(*offset) ? offset->get<int64_t>() : 1;
    if (offset != out.end() && is_line_number(*offset)) {
      out["start_line"] = first;
      out.erase("offset");
    }
    limit = out.find("limit");
    if (limit != out.end() && is_line_number(*limit)) {
      out["end_line"] = first + std::max<int64_t>(1, limit->get<int64_t>()) - 1;
      out.erase("limit");
    }
  }
  return out;
}

std::string claude_permission_mode(std::string_view troupe_mode) {
  if (troupe_mode == "accept-edits")
    return "acceptEdits";
  if (troupe_mode == "bypass")
    return "bypassPermissions";
  if (troupe_mode == "dont-ask")
    return "dontAsk";
  return std::string{troupe_mode};
}

std::vector<std::string> troupe_rule_texts(std::string_view rule) {
  auto open = rule.find('(');
  auto tool = rule.substr(0, open);
  auto rest = open == std::string_view::npos ? std::string_view{} : rule.substr(open);
  if (tool == "Edit")
    return {"edit" + std::string{rest}, "patch" + std::string{rest}, "write" + std::string{rest}};
  auto own = troupe_tool_name(tool);
  if (!own)
    return {std::string{rule}};
  return {*own + std::string{rest}};
}

} // namespace troupe
