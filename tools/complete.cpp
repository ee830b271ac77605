#include "tools/complete.hpp"

namespace troupe {

tool_spec complete_tool() {
  tool_spec spec;
  spec.name = "complete";
  spec.description =
    "Declare the task finished. The run ends at once with `summary` as its final answer, so "
    "say there what was done and anything the user must know. Do not call it together with "
    "other tools, and only when the work is really done.";
  spec.input_schema = {
    {"type", "object"},
    {"properties",
     {{"summary", {{"type", "string"}, {"description", "what was done: the final answer"}}}}},
    {"required", {"summary"}}};
  spec.block_names = {"complete"};
  spec.examples = {{"", "Added the --verbose flag and a test for it; all tests pass.\n"}};
  spec.read_only = true;
  spec.effect = loop_effect::complete;
  spec.input_from_block = [](std::string_view, std::string_view body) {
    return nlohmann::json{{"summary", std::string{body}}};
  };
  spec.run = [](const nlohmann::json& input, const tool_context&) {
    tool_result result;
    result.output = input.at("summary").get<std::string>();
    if (result.output.find_first_not_of(" \t\r\n") == std::string::npos)
      return error_result("complete needs a summary of what was done");
    return result;
  };
  return spec;
}

} // namespace troupe
