#include "context/continuation.hpp"

namespace troupe {

message continuation_prompt(const message& so_far, const std::string& cut_call) {
  std::string ask =
    "Your reply was cut off because it reached the output token limit. Continue exactly where "
    "it stopped: do not repeat what you already wrote and do not apologise or recap; if the "
    "cut fell inside a word, a code block or a tool call, complete it.";
  if (!so_far.tool_calls.empty()) {
    std::string names;
    for (auto& call : so_far.tool_calls)
      names += (names.empty() ? "" : ", ") + call.name;
    ask += " The tool calls you already made (" + names +
           ") stand and will run; do not make them again.";
  }
  if (!cut_call.empty())
    ask += " The call to the " + cut_call +
           " tool you were writing was cut before its input was complete and was not run: "
           "make that call again, in full.";
  message prompt;
  prompt.role = role::user;
  prompt.origin = message_origin::continuation;
  prompt.content = std::move(ask);
  return prompt;
}

} // namespace troupe
