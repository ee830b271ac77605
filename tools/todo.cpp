#include "tools/todo.hpp"

#include "protocol/bounded_json.hpp"

namespace troupe {

std::optional<std::string> check_todos(const nlohmann::json& todos) {
  if (!todos.is_array())
    return "todos must be an array of {content, status} objects";
  size_t in_progress = 0;
  for (size_t i = 0; i < todos.size(); ++i) {
    auto& item = todos[i];
    auto where = "todos[" + std::to_string(i) + "]";
    if (!item.is_object() || !item.contains("content") || !item["content"].is_string() ||
        item["content"].get<std::string>().empty())
      return where + " needs a non-empty content string";
    auto status = item.value("status", std::string{});
    if (status != "pending" && status != "in_progress" && status != "completed")
      return where + ".status must be pending, in_progress or completed";
    in_progress += status == "in_progress";
    for (auto& [key, value] : item.items())
      if (key != "content" && key != "status")
        return where + " has an unknown key '" + key + "'";
  }
  if (in_progress > 1)
    return "only one task can be in_progress at a time";
  return std::nullopt;
}

namespace {

tool_result run_todo(const nlohmann::json& input, const tool_context&) {
  const auto& todos = input.at("todos");
  if (auto problem = check_todos(todos))
    return error_result(*problem);
  tool_result result;
  size_t done = 0;
  for (auto& item : todos) {
    auto status = item["status"].get<std::string>();
    done += status == "completed";
    result.output += (status == "completed" ? "[x] " : status == "in_progress" ? "[>] " : "[ ] ") +
                     item["content"].get<std::string>() + "\n";
  }
  result.output = "Task list (" + std::to_string(done) + "/" + std::to_string(todos.size()) +
                  " done):\n" + result.output;
  return result;
}

} // namespace

tool_spec todo_tool() {
  tool_spec spec;
  spec.name = "todo";
  spec.description =
    "Keep your task list for multi-step work: pass the whole list each time, each item with "
    "content and status (pending, in_progress, completed); at most one in_progress. Mark an "
    "item completed as soon as it is done.";
  spec.input_schema = {
    {"type", "object"},
    {"properties",
     {{"todos",
       {{"type", "array"},
        {"items",
         {{"type", "object"},
          {"properties",
           {{"content", {{"type", "string"}}},
            {"status", {{"type", "string"}, {"enum", {"pending", "in_progress", "completed"}}}}}},
          {"required", {"content", "status"}}}}}}}},
    {"required", {"todos"}}};
  spec.read_only = true;
  spec.effect = loop_effect::todos;
  spec.block_names = {"todo"};
  spec.examples = {{"", "[{\"content\": \"Write the parser\", \"status\": \"in_progress\"},\n"
                        " {\"content\": \"Test it\", \"status\": \"pending\"}]\n"}};
  spec.input_from_block = [](std::string_view, std::string_view body) {
    auto todos = parse_json_bounded(body);
    return nlohmann::json{{"todos", todos ? std::move(*todos) : nlohmann::json(std::string{body})}};
  };
  spec.run = run_todo;
  return spec;
}

} // namespace troupe
