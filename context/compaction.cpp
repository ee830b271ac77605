#include "context/compaction.hpp"

#include <algorithm>

namespace troupe {

namespace {

constexpr const char* compaction_system_prompt =
  "You summarise the conversation of an AI coding agent with its user so that the agent can "
  "continue the work from your summary alone: the earlier messages will be gone. Be complete "
  "about facts and terse in words. Never invent anything that is not in the conversation.";

constexpr const char* compaction_instructions =
  "Write the summary now, in these sections:\n"
  "1. Task: the user's requests, the latest one quoted verbatim, and any constraints they set.\n"
  "2. Progress: what has been done, in order; decisions taken and why.\n"
  "3. Files and commands: every file read, created or changed (with the gist of the change) "
  "and the commands that matter, with their outcome.\n"
  "4. Errors: what failed and how it was fixed, or that it is still open.\n"
  "5. Current state: exactly where the work stands at the end of the conversation.\n"
  "6. Next steps: what remains to do, the very next action first.\n"
  "Answer with the summary only.";

// A tool result keeps its head and tail: the start says what ran, the end how it ended.
constexpr size_t result_head = 1500;
constexpr size_t result_tail = 500;

std::string clipped(const std::string& text) {
  if (text.size() <= result_head + result_tail + 64)
    return text;
  return text.substr(0, result_head) + "\n[… " +
         std::to_string(text.size() - result_head - result_tail) + " bytes left out …]\n" +
         text.substr(text.size() - result_tail);
}

std::string render(const message& m) {
  if (is_compact_boundary(m))
    return "[summary of the conversation before this point]\n" + m.content + "\n";
  switch (m.role) {
    case role::user:
      if (m.origin == message_origin::none || m.origin == message_origin::prompt)
        return "[user]\n" + m.content + "\n";
      return "[user (" + std::string{to_string(m.origin)} + ")]\n" + m.content + "\n";
    case role::system:
      return "[system]\n" + m.content + "\n";
    case role::assistant: {
      std::string out = "[assistant]\n" + m.content + "\n";
      for (auto& call : m.tool_calls)
        if (call.format == call_format::native)
          out += "[assistant called " + call.name + "] " + call.input.dump() + "\n";
      return out;
    }
    case role::tool:
      return "[result of " + m.tool_name +
             (m.tool_name == "shell" ? ", exit code " + std::to_string(m.exit_code) : "") +
             (m.is_error ? ", error" : "") + "]\n" + clipped(m.content) + "\n";
  }
  return {};
}

} // namespace

model_request compaction_request(const compaction_plan& plan, const compaction_trigger& trigger,
                                 const context_budget& budget) {
  std::string instructions = compaction_instructions;
  if (!trigger.instructions.empty())
    instructions += "\n\nThe user asks you to pay attention to this:\n" + trigger.instructions;
  // What the transcript may take: the usable window less the prompt and the summary's room.
  auto room = budget.compact_threshold() - estimate_tokens(compaction_system_prompt) -
              estimate_tokens(instructions) - 64;
  std::vector<std::string> pieces;
  for (auto& m : plan.to_summarize)
    pieces.push_back(render(*m));
  // Newest first until the room is used up; a previous summary is kept whatever it costs.
  size_t first_kept = pieces.size();
  int64_t used = 0;
  bool has_summary = !plan.to_summarize.empty() && is_compact_boundary(*plan.to_summarize[0]);
  if (has_summary)
    used += estimate_tokens(pieces[0]);
  for (size_t i = pieces.size(); i-- > (has_summary ? 1u : 0u);) {
    auto cost = estimate_tokens(pieces[i]);
    if (used + cost > room && first_kept < pieces.size())
      break;
    used += cost;
    first_kept = i;
  }
  std::string transcript;
  if (has_summary)
    transcript += pieces[0] + "\n";
  size_t left_out = first_kept - (has_summary ? 1 : 0);
  if (left_out > 0)
    transcript += "[… " + std::to_string(left_out) +
                  " older messages left out: they did not fit the model's window …]\n\n";
  for (size_t i = first_kept; i < pieces.size(); ++i)
    transcript += pieces[i] + "\n";

  message ask;
  ask.role = role::user;
  ask.origin = message_origin::compaction;
  ask.content = "Here is the conversation so far:\n\n<conversation>\n" + transcript +
                "</conversation>\n\n" + instructions;
  model_request request;
  request.system_prompt = std::string{compaction_system_prompt};
  request.context.messages.push_back(std::make_shared<const message>(std::move(ask)));
  return request;
}

message make_boundary(const compaction_record& record) {
  message m;
  m.role = role::system;
  m.origin = message_origin::compact_boundary;
  m.content = record.summary;
  m.meta = {{"trigger", record.trigger.kind},
            {"reactive", record.trigger.reactive},
            {"pre_tokens", record.tokens_before},
            {"post_tokens", record.tokens_after},
            {"summarized_messages", record.summarized_messages},
            {"preserved_from", record.preserved_from}};
  if (!record.trigger.instructions.empty())
    m.meta["instructions"] = record.trigger.instructions;
  return m;
}

} // namespace troupe
