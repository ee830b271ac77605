#include "orchestrator/output_format.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "context/context_window.hpp"
#include "providers/sse.hpp"
#include "store/ids.hpp"
#include "tools/claude_code_names.hpp"

namespace troupe {

namespace {

nlohmann::json content_blocks(const message& m) {
  auto blocks = nlohmann::json::array();
  if (!m.content.empty())
    blocks.push_back({{"type", "text"}, {"text", m.content}});
  for (auto& call : m.tool_calls)
    blocks.push_back({{"type", "tool_use"}, {"id", call.id}, {"name", call.name},
                      {"input", call.input}});
  return blocks;
}

nlohmann::json parent_of(const message_event& e) {
  return e.parent_tool_use_id.empty() ? nlohmann::json(nullptr)
                                      : nlohmann::json(e.parent_tool_use_id);
}

std::string indent(const std::string& text, const std::string& prefix) {
  std::string out;
  std::istringstream in{text};
  std::string line;
  while (std::getline(in, line))
    out += prefix + line + "\n";
  return out;
}

// How a refused call's result is headed in the text format.
const char* refusal_text(refusal r) {
  switch (r) {
    case refusal::permission:
      return "refused";
    case refusal::plan_mode:
      return "refused (plan mode)";
    case refusal::user:
      return "declined";
    case refusal::hook:
      return "blocked by a hook";
    default:
      return "not run";
  }
}

// The code point of a character that reorders or breaks the text around it on a terminal
// without being seen (bidirectional embeddings, overrides and isolates; line and paragraph
// separators), 0 for any other.
uint32_t reordering_control(std::string_view utf8) {
  if (utf8.size() != 3 || static_cast<unsigned char>(utf8[0]) != 0xe2)
    return 0;
  auto b1 = static_cast<unsigned char>(utf8[1]);
  auto b2 = static_cast<unsigned char>(utf8[2]);
  uint32_t point = 0x2000 | ((b1 & 0x3fu) << 6) | (b2 & 0x3fu);
  bool reorders = (point >= 0x2028 && point <= 0x202e) || (point >= 0x2066 && point <= 0x2069);
  return reorders ? point : 0;
}

} // namespace

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c == '\r') {
      if (i + 1 >= text.size() || text[i + 1] != '\n')
        out += '\n';
      ++i;
    } else if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f)) {
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x80) {
      out += '^';
      out += static_cast<char>(c ^ 0x40); // ESC -> ^[, BEL -> ^G, DEL -> ^?
      ++i;
    } else if (auto sequence = utf8_sequence_at(text, i); sequence.well_formed) {
      if (c == 0xc2 && static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
        // A C1 control (U+0080..U+009F), which some terminals obey like ESC + a letter.
        out += "^[";
        out += static_cast<char>(static_cast<unsigned char>(text[i + 1]) - 0x40);
      } else if (auto point = reordering_control(text.substr(i, sequence.length)); point != 0) {
        // Shown, not obeyed: a right-to-left override makes `rm -rf ~ #gnp.exe` look like
        // something else in a permission question ("Trojan Source").
        char name[16];
        std::snprintf(name, sizeof name, "<U+%04X>", point);
        out += name;
      } else {
        out.append(text.substr(i, sequence.length));
      }
      i += sequence.length;
    } else {
      if (c <= 0x9f && i > 0 && static_cast<unsigned char>(text[i - 1]) < 0x80) {
        // A raw C1 byte after ASCII is no part of a UTF-8 character: 8-bit terminals obey it.
        out += "^[";
        out += static_cast<char>(c - 0x40);
      } else {
        // No UTF-8 (binary output, another encoding): one U+FFFD for each broken sequence, as
        // the transcript and the JSON outputs have it, never a byte the terminal would guess at.
        out += "\xef\xbf\xbd";
      }
      i += sequence.length; // a stray byte's is 1; the byte that broke a sequence off is next
    }
  }
  return out;
}

text_style text_style::make(bool on) {
  if (!on)
    return {};
  return {"\033[1m", "\033[2m", "\033[31m", "\033[32m", "\033[33m", "\033[36m", "\033[35m",
          "\033[0m"};
}

bool colour_wanted(int fd) {
  const char* no_color = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  return ::isatty(fd) != 0 && (no_color == nullptr || *no_color == '\0') &&
         (term == nullptr || std::strcmp(term, "dumb") != 0);
}

const char* result_subtype(terminal_reason r) {
  switch (r) {
    case terminal_reason::completed:
    case terminal_reason::backgrounded:
      return "success";
    case terminal_reason::max_turns:
      return "error_max_turns";
    case terminal_reason::max_budget:
      return "error_max_budget_usd";
    default:
      return "error_during_execution";
  }
}

nlohmann::json to_stream_json(const session_started_event& e) {
  return {{"type", "system"},
          {"subtype", "init"},
          {"uuid", new_message_id()},
          {"session_id", e.session_id},
          {"cwd", e.cwd},
          {"model", e.model},
          {"tools", e.tools},
          {"transcript_path", e.transcript_path},
          {"loaded_messages", e.loaded_messages},
          {"memory_files", e.memory_files}};
}

nlohmann::json to_stream_json(const message_event& e) {
  const auto& m = e.msg;
  switch (m.role) {
    case role::assistant:
      return {{"type", "assistant"},
              {"message",
               {{"id", m.id}, {"role", "assistant"}, {"content", content_blocks(m)}}},
              {"uuid", m.id},
              {"parent_tool_use_id", parent_of(e)},
              {"session_id", e.session_id}};
    case role::tool: {
      nlohmann::json line = {{"type", "user"},
              {"message",
               {{"role", "user"},
                {"content", nlohmann::json::array({{{"type", "tool_result"},
                                                    {"tool_use_id", m.tool_call_id},
                                                    {"content", m.content},
                                                    {"is_error", m.is_error}}})}}},
              {"exit_code", m.exit_code},
              {"truncated", m.truncated},
              {"uuid", m.id},
              {"parent_tool_use_id", parent_of(e)},
              {"session_id", e.session_id}};
      // A call answered without running says who refused it ("permission", "user", …).
      if (m.refused != refusal::none)
        line["refused"] = to_string(m.refused);
      return line;
    }
    case role::user:
      return {{"type", "user"},
              {"message", {{"id", m.id}, {"role", "user"}, {"content", m.content}}},
              {"origin", to_string(m.origin)},
              {"uuid", m.id},
              {"parent_tool_use_id", parent_of(e)},
              {"session_id", e.session_id}};
    case role::system:
      if (is_compact_boundary(m))
        return {{"type", "system"},      {"subtype", "compact_boundary"},
                {"uuid", m.id},          {"compact_metadata", m.meta},
                {"summary", m.content},  {"session_id", e.session_id}};
      return {{"type", "system"},  {"subtype", "message"},       {"content", m.content},
              {"origin", to_string(m.origin)}, {"uuid", m.id},
              {"session_id", e.session_id}};
  }
  return nullptr;
}

nlohmann::json to_stream_json(const notice_event& e) {
  return {{"type", "system"}, {"subtype", e.kind}, {"message", e.text},
          {"session_id", e.session_id}};
}

nlohmann::json to_stream_json(const hook_run_event& e) {
  nlohmann::json line = {{"type", "system"},
                         {"subtype", e.finished ? "hook_response" : "hook_started"},
                         {"hook_id", e.hook_id},
                         {"hook_name", e.command},
                         {"hook_event", e.event},
                         {"session_id", e.session_id}};
  if (e.finished) {
    line["exit_code"] = e.exit_code;
    line["outcome"] = e.outcome;
    line["stdout"] = e.stdout_text;
    line["stderr"] = e.stderr_text;
    line["duration_ms"] = e.duration_ms;
  }
  return line;
}

nlohmann::json to_stream_json(const session_ended_event& e) {
  bool failed = e.reason != terminal_reason::completed &&
                e.reason != terminal_reason::backgrounded;
  nlohmann::json line = {{"type", "result"},
                         {"subtype", result_subtype(e.reason)},
                         {"is_error", failed},
                         {"terminal_reason", e.reason},
                         {"num_turns", e.state.turn_count},
                         {"num_steps", e.state.total_steps},
                         {"session_id", e.session_id},
                         {"duration_ms", e.duration_ms},
                         {"result", e.result_text},
                         {"usage", e.usage},
                         {"permission_denials", e.permission_denials}};
  line["uuid"] = new_message_id();
  line["duration_api_ms"] = e.api_duration_ms;
  // The session's cost so far, as Claude Code counts it (the run's alone is cost_usd).
  line["total_cost_usd"] = e.total_cost_usd;
  line["cost_usd"] = e.cost_usd;
  line["stop_reason"] = e.reason == terminal_reason::completed ? nlohmann::json("end_turn")
                                                               : nlohmann::json(nullptr);
  nlohmann::json model_usage = nlohmann::json::object();
  if (!e.model.empty())
    model_usage[e.model] = {{"inputTokens", e.usage.input_tokens},
                            {"outputTokens", e.usage.output_tokens},
                            {"cacheReadInputTokens", e.usage.cache_read_tokens},
                            {"cacheCreationInputTokens", e.usage.cache_write_tokens},
                            {"webSearchRequests", 0},
                            {"costUSD", e.cost_usd}};
  line["modelUsage"] = std::move(model_usage);
  if (failed) {
    // The Agent SDK reads an error result's `errors` (it joins them into its exception).
    auto why = !e.error_message.empty() ? e.error_message
               : e.reason == terminal_reason::max_turns
                 ? "reached the maximum number of steps (--max-turns / --max-steps)"
                 : "the run ended " + std::string{to_string(e.reason)};
    line["errors"] = nlohmann::json::array({why});
  }
  if (!e.error_message.empty())
    line["error"] = e.error_message;
  if (e.error_kind != model_error_kind::none)
    line["error_kind"] = e.error_kind;
  if (!e.agents_left.empty()) {
    // Which subagents the run's end stopped (or left to finish), so a script can tell.
    auto agents = nlohmann::json::array();
    for (auto& a : e.agents_left)
      agents.push_back({{"agent_id", a.id}, {"description", a.description}, {"state", a.state}});
    line["agents_left"] = std::move(agents);
  }
  return line;
}

void use_claude_names(nlohmann::json& line) {
  if (!line.is_object())
    return;
  auto type = line.value("type", std::string{});
  if (type == "system" && line.value("subtype", std::string{}) == "init" &&
      line.contains("tools") && line["tools"].is_array()) {
    for (auto& tool : line["tools"])
      if (tool.is_string())
        tool = claude_tool_name(tool.get<std::string>());
  } else if (type == "assistant" && line.contains("message")) {
    for (auto& block : line["message"]["content"])
      if (block.value("type", std::string{}) == "tool_use") {
        auto name = block.value("name", std::string{});
        block["input"] = claude_tool_input(name, block["input"]);
        block["name"] = claude_tool_name(name);
      }
  } else if (type == "result" && line.contains("permission_denials")) {
    for (auto& denial : line["permission_denials"]) {
      auto name = denial.value("tool_name", std::string{});
      denial["tool_input"] = claude_tool_input(name, denial["tool_input"]);
      denial["tool_name"] = claude_tool_name(name);
    }
  }
}

std::string to_text(const session_started_event& e, const text_style& style) {
  return style.dim + "● session " + e.session_id + " · " + printable(e.model) + " · " +
         printable(e.cwd) +
         (e.loaded_messages > 0 ? " · " + std::to_string(e.loaded_messages) + " messages loaded"
                                : "") +
         style.reset + "\n";
}

std::string to_text(const message_event& e, bool streamed, const text_style& style) {
  const auto& m = e.msg;
  auto content = printable(m.content);
  switch (m.role) {
    case role::user:
      if (m.origin == message_origin::task_notification && m.meta.is_object()) {
        auto source = m.meta.value("source", std::string{});
        auto id = m.meta.value("task_id", std::string{});
        auto status = m.meta.value("status", std::string{});
        return "\n" + style.magenta + "◆ task notification: " + source +
               (id.empty() ? "" : " " + id) + (status.empty() ? "" : " " + status) + style.reset +
               "\n" + style.dim + indent(content, "  │ ") + style.reset;
      }
      if (m.origin == message_origin::hook)
        return style.dim + "⚙ hook: " + content + style.reset +
               (content.empty() || content.back() != '\n' ? "\n" : "");
      return "\n" + style.bold + "> " + content + style.reset +
             (content.empty() || content.back() != '\n' ? "\n" : "");
    case role::assistant: {
      std::string out = streamed ? "" : "\n" + content;
      if (!content.empty() && content.back() != '\n')
        out += "\n";
      for (auto& call : m.tool_calls)
        if (call.format == call_format::native)
          out += style.cyan + "→ " + printable(call.name) + " " + printable(call.input.dump()) +
                 style.reset + "\n";
      return out;
    }
    case role::tool: {
      // A call that never ran says who refused it, apart from a command that ran and failed.
      if (m.refused != refusal::none)
        return style.yellow + "← " + printable(m.tool_name) + " " + refusal_text(m.refused) +
               style.reset + "\n" + style.dim + indent(content, "  │ ") + style.reset;
      std::string head = "← " + printable(m.tool_name);
      if (m.tool_name == "shell" && m.exit_code >= 0) // -1: no exit status (nothing ran)
        head += " (exit " + std::to_string(m.exit_code) + ")";
      if (m.is_error)
        head += " [error]";
      return (m.is_error ? style.red : style.cyan) + head + style.reset + "\n" + style.dim +
             indent(content, "  │ ") + style.reset;
    }
    case role::system:
      if (is_compact_boundary(m) && m.meta.is_object())
        return style.dim + "● compacted the conversation (" +
               m.meta.value("trigger", std::string{"auto"}) + "): ~" +
               std::to_string(m.meta.value("pre_tokens", int64_t{0})) + " → ~" +
               std::to_string(m.meta.value("post_tokens", int64_t{0})) + " tokens" +
               style.reset + "\n";
      return style.yellow + "[system] " + content + style.reset + "\n";
  }
  return {};
}

nlohmann::json to_stream_json(const generation_progress& e, bool include_partial_messages) {
  if (e.kind == progress_kind::api_retry)
    return {{"type", "system"},        {"subtype", "api_retry"},   {"attempt", e.attempt},
            {"max_retries", e.max_retries}, {"retry_delay_ms", e.delay_ms},
            {"error_status", e.status}, {"error", e.error},         {"session_id", e.session_id}};
  if (!include_partial_messages)
    return nullptr;
  return {{"type", "stream_event"},
          {"event",
           {{"type", "content_block_delta"}, {"delta", {{"type", "text_delta"}, {"text", e.text}}}}},
          {"session_id", e.session_id}};
}

std::string to_text(const generation_progress& e, const text_style& style) {
  if (e.kind == progress_kind::text_delta)
    return printable(e.text);
  return style.yellow + "! api_retry: attempt " + std::to_string(e.attempt) + "/" +
         std::to_string(e.max_retries) + " in " + std::to_string(e.delay_ms) + " ms (" +
         printable(e.error) + ")" + style.reset + "\n";
}

std::string to_text(const notice_event& e, const text_style& style) {
  // A command's answer is what the user asked for: plain text, not a warning.
  auto text = printable(e.text);
  if (e.kind == "command")
    return text + (text.empty() || text.back() != '\n' ? "\n" : "");
  // An MCP tool's progress is news about the call under way, not a warning.
  if (e.kind == "mcp_progress")
    return style.dim + "  … " + text + style.reset + "\n";
  return style.yellow + "! " + e.kind + ": " + text + style.reset + "\n";
}

std::string to_text(const hook_run_event& e, const text_style& style) {
  if (!e.finished || e.outcome == "success")
    return {};
  auto why = e.outcome == "timeout"   ? std::string{"timed out"}
             : e.outcome == "blocked" ? "blocked"
             : e.outcome == "stopped" ? "stopped the session"
                                      : "failed (exit " + std::to_string(e.exit_code) + ")";
  auto detail = printable(!e.stderr_text.empty() ? e.stderr_text : e.stdout_text);
  while (!detail.empty() && (detail.back() == '\n' || detail.back() == ' '))
    detail.pop_back();
  auto command = printable(e.command.size() > 60 ? e.command.substr(0, 57) + "..." : e.command);
  for (auto& c : command)
    if (c == '\n')
      c = ' ';
  bool refused = e.outcome == "blocked" || e.outcome == "stopped";
  return (refused ? style.yellow : style.red) + "⚙ " + to_string(e.event) +
         " hook " + why + ": " + command + style.reset +
         (detail.empty() ? "" : "\n" + indent(detail, "  │ ")) + (detail.empty() ? "\n" : "");
}

std::string to_text(const session_ended_event& e, const text_style& style) {
  std::string out = "\n" + style.dim + "● " + std::string{to_string(e.reason)} + " · " +
                    std::to_string(e.state.turn_count) + " turn(s) · " +
                    std::to_string(e.state.total_steps) + " step(s) · " +
                    std::to_string(e.duration_ms) + " ms" + style.reset + "\n";
  if (!e.error_message.empty())
    out += style.red + "error: " + printable(e.error_message) + style.reset + "\n";
  for (auto& denial : e.permission_denials)
    out += printable("denied: " + denial.tool_name + " " + denial.tool_input.dump() + " (" +
                     denial.reason + ")\n");
  for (auto& a : e.agents_left)
    out += style.yellow +
           printable((a.state == "running" ? "left to finish: agent " : "stopped: agent ") +
                     a.id + " (" + a.description + ")") +
           style.reset + "\n";
  return out;
}

} // namespace troupe
