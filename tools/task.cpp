#include "tools/task.hpp"

namespace troupe {

// Carried out by the session, which owns its subagents (see actors/session_agents.cpp).
tool_spec task_tool(const agent_types& types) {
  tool_spec spec;
  spec.name = "task";
  spec.description =
    "Launch a subagent: a separate agent with its own context that works on `prompt` with the "
    "same tools and returns its final answer. mode \"foreground\" (default) waits for that "
    "answer, which becomes this call's result; \"background\" returns at once with the agent "
    "id and you get a <task-notification> when it ends, so you can keep working meanwhile. "
    "Give `resume` an agent id to send a new prompt to an agent you launched before. Launch "
    "several independent subagents in one reply to run them at once.";
  if (!types.empty()) {
    spec.description += "\n\nsubagent_type picks a kind of agent with instructions and tools of "
                        "its own (default: general-purpose, a subagent like you):";
    for (auto& type : types) {
      auto line = type.name + ": " + type.description;
      for (auto& c : line)
        if (c == '\n' || c == '\r')
          c = ' ';
      spec.description += "\n- " + line;
    }
  }
  spec.input_schema = {
    {"type", "object"},
    {"properties",
     {{"prompt",
       {{"type", "string"}, {"minLength", 1}, {"description", "the whole task, self-contained"}}},
      {"description", {{"type", "string"}, {"description", "3-6 words naming the task"}}},
      {"mode",
       {{"type", "string"},
        {"enum", {"foreground", "background"}},
        {"description", "foreground (wait for the answer) or background"}}},
      {"model", {{"type", "string"}, {"description", "a different model for the subagent"}}},
      {"max_steps",
       {{"type", "integer"},
        {"minimum", 1},
        {"maximum", 1000000},
        {"description", "most steps per turn of the subagent"}}},
      {"tools",
       {{"type", "array"},
        {"items", {{"type", "string"}}},
        {"description", "the tools the subagent may use (default: all of yours)"}}},
      {"resume", {{"type", "string"}, {"description", "the id of an agent to continue"}}},
      {"subagent_type",
       {{"type", "string"},
        {"description", "the kind of agent to launch (general-purpose unless the description "
                        "lists others)"}}}}},
    {"required", {"prompt"}}};
  spec.block_names = {"task"};
  spec.examples = {{"background", "Find every call site of parse_config and list them."}};
  // In the text formats the fence line may also name a model or an agent to resume:
  // ```task background model=openai/gpt-4.1``` or ```task resume=agent_1a2b3c```.
  // The subagent's own calls are checked like this agent's: launching it needs no approval,
  // and several launches of one reply run at once.
  spec.read_only = true;
  spec.kind = tool_kind::subagent;
  // ```task [background|foreground]\nprompt``` — the first line of the prompt describes it.
  spec.input_from_block = [](std::string_view args, std::string_view body) {
    auto prompt = std::string{trim(body)};
    nlohmann::json input = {{"prompt", prompt},
                            {"description", prompt.substr(0, prompt.find('\n')).substr(0, 60)}};
    auto words = std::string{trim(args)};
    for (size_t start = 0; start < words.size();) {
      auto end = words.find_first_of(" \t", start);
      auto word = words.substr(start, end == std::string::npos ? std::string::npos : end - start);
      start = end == std::string::npos ? words.size() : words.find_first_not_of(" \t", end);
      auto eq = word.find('=');
      if (eq == std::string::npos) {
        input["mode"] = word;
        continue;
      }
      auto key = word.substr(0, eq);
      auto value = word.substr(eq + 1);
      if (key == "max_steps" && !value.empty() &&
          value.find_first_not_of("0123456789") == std::string::npos && value.size() < 9)
        input[key] = std::stoi(value);
      else
        input[key] = value; // unknown keys come back to the model as a schema error
    }
    return input;
  };
  return spec;
}

} // namespace troupe
