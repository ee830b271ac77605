#include "tools/task.hpp"

namespace troupe {

// Carried out by the session, which owns its subagents (see actors/session_agents.cpp).
tool_spec task_tool() {
  tool_spec spec;
  spec.name = "task";
  spec.description =
    "Launch a subagent: a separate agent with its own context that works on `prompt` with the "
    "same tools and returns its final answer. mode \"foreground\" (default) waits for that "
    "answer, which becomes this call's result; \"background\" returns at once with the agent "
    "id and you get a <task-notification> when it ends, so you can keep working meanwhile. "
    "Give `resume` an agent id to send a new prompt to an agent you launched before. Launch "
    "several independent subagents in one reply to run them at once.";
  spec.input_schema = {
    {"type", "object"},
    {"properties",
     {{"prompt", {{"type", "string"}, {"description", "the whole task, self-contained"}}},
      {"description", {{"type", "string"}, {"description", "3-6 words naming the task"}}},
      {"mode",
       {{"type", "string"},
        {"enum", {"foreground", "background"}},
        {"description", "foreground (wait for the answer) or background"}}},
      {"model", {{"type", "string"}, {"description", "a different model for the subagent"}}},
      {"max_steps", {{"type", "integer"}, {"description", "most steps per turn of the subagent"}}},
      {"tools",
       {{"type", "array"},
        {"items", {{"type", "string"}}},
        {"description", "the tools the subagent may use (default: all of yours)"}}},
      {"resume", {{"type", "string"}, {"description", "the id of an agent to continue"}}}}},
    {"required", {"prompt"}}};
  spec.block_names = {"task"};
  spec.examples = {{"background", "Find every call site of parse_config and list them."}};
  // The subagent's own calls are checked like this agent's: launching it needs no approval,
  // and several launches of one reply run at once.
  spec.read_only = true;
  spec.kind = tool_kind::subagent;
  // ```task [background|foreground]\nprompt``` — the first line of the prompt describes it.
  spec.input_from_block = [](std::string_view args, std::string_view body) {
    auto prompt = std::string{trim(body)};
    auto mode = std::string{trim(args)};
    nlohmann::json input = {{"prompt", prompt},
                            {"description", prompt.substr(0, prompt.find('\n')).substr(0, 60)}};
    if (!mode.empty())
      input["mode"] = mode;
    return input;
  };
  return spec;
}

} // namespace troupe
