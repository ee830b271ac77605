#pragma once
// The scripted provider's file format: JSONL, one model reply per line, replayed in order.
//   {"text": "...", "tool_calls": [{"name": "shell", "input": {...}}],
//    "stop_reason": "end_turn"|"max_tokens", "error": {"status": 429, "message": "..."},
//    "delay_ms": N, "usage": {"input_tokens": N, "output_tokens": N}}

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/expected.hpp"
#include "protocol/message.hpp"
#include "protocol/model.hpp"
#include "providers/provider.hpp"

namespace troupe {

/// One line of a script.
struct scripted_reply {
  std::string text;
  std::vector<tool_call> tool_calls;
  std::string stop_reason = "end_turn";
  int32_t error_status = 0;
  std::string error_message;
  int64_t delay_ms = 0;
  token_usage usage;
  /// 1-based line in the script, for error messages.
  size_t line = 0;
};

/// A whole script and where it came from.
struct script {
  std::string source;
  std::vector<scripted_reply> replies;
};

/// Parses script text; an invalid line is an error naming source and line number.
expected<script> parse_script(std::string_view text, const std::string& source);

/// Reads and parses a script file.
expected<script> load_script(const std::filesystem::path& path);

/// Turns one scripted line into the reply a model client delivers.
model_reply to_model_reply(const scripted_reply& line);

} // namespace troupe
