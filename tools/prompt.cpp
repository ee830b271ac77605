#include "tools/prompt.hpp"

#include "tools/tool_parser.hpp"

namespace troupe {

const char* const default_instructions =
  "You are troupe, a coding agent working in the user's workspace. Work step by step: "
  "use a tool, read its result, decide the next step. When the task is done, answer "
  "without calling any tool and the turn ends.";

std::string build_system_prompt(const tool_registry& registry, tool_format format,
                                const std::string& instructions) {
  std::string prompt = instructions;
  if (!prompt.empty() && prompt.back() != '\n')
    prompt += '\n';
  if (format == tool_format::tool)
    return prompt;
  if (format == tool_format::xml)
    prompt += "\nTools are run when your reply contains a <tool-use> element holding one "
              "element named after the tool; arguments go in its args attribute.\n";
  else
    prompt += "\nTools are run when your reply contains a fenced block whose language names "
              "them. Blocks in other languages are shown, not run.\n";
  for (auto& tool : registry.tools()) {
    if (tool.block_names.empty() || !tool.input_from_block)
      continue; // native calling only (edit: patch is its text form)
    prompt += "\n## " + tool.name + "\n" + tool.description + "\n";
    for (auto& example : tool.examples)
      prompt += "Example:\n" +
                (format == tool_format::xml
                   ? render_xml_call(tool.block_names.front(), example.args, example.body)
                   : render_markdown_call(tool.block_names.front(), example.args, example.body));
  }
  return prompt;
}

} // namespace troupe
