#include "context/token_budget.hpp"

#include <algorithm>

namespace troupe {

namespace {

struct table_entry {
  std::string_view prefix;
  model_limits limits;
};

// Longest prefixes first within a family: the first match wins. Output sizes are what troupe
// asks for by default, not always the model's maximum (as Claude Code and Codex do).
constexpr table_entry model_table[] = {
  {"claude-3-5-haiku", {200000, 8192}},
  {"claude-3-5", {200000, 8192}},
  {"claude-3-haiku", {200000, 4096}},
  {"claude-3-opus", {200000, 4096}},
  {"claude", {200000, 32000}},
  {"gpt-4.1", {1047576, 32768}},
  {"gpt-4o", {128000, 16384}},
  {"gpt-4-turbo", {128000, 4096}},
  {"gpt-4", {8192, 4096}},
  {"gpt-3.5", {16385, 4096}},
  {"gpt-5", {400000, 32000}},
  {"o1", {200000, 32000}},
  {"o3", {200000, 32000}},
  {"o4", {200000, 32000}},
  {"gemini", {1048576, 8192}},
  {"deepseek", {128000, 8192}},
  {"qwen", {32768, 8192}},
  {"llama", {131072, 8192}},
  {"mistral", {32768, 8192}},
};

} // namespace

model_limits limits_for_model(std::string_view model) {
  // "anthropic/claude-…", "openrouter/openai/gpt-4o": the last path element names the model.
  if (auto slash = model.rfind('/'); slash != std::string_view::npos)
    model = model.substr(slash + 1);
  for (const auto& entry : model_table)
    if (model.substr(0, entry.prefix.size()) == entry.prefix)
      return entry.limits;
  return model_limits{};
}

int64_t estimate_tokens(std::string_view text) {
  return static_cast<int64_t>((text.size() + 3) / 4);
}

int64_t estimate_tokens(const message& m) {
  constexpr int64_t per_message = 4;
  constexpr int64_t per_call = 10;
  int64_t tokens = per_message + estimate_tokens(m.content);
  for (const auto& call : m.tool_calls)
    tokens += per_call + estimate_tokens(call.name) + estimate_tokens(call.input.dump());
  return tokens;
}

int64_t estimate_tokens(const std::vector<tool_descriptor>& tools) {
  int64_t tokens = 0;
  for (const auto& t : tools)
    tokens += 10 + estimate_tokens(t.name) + estimate_tokens(t.description) +
              estimate_tokens(t.input_schema.dump());
  return tokens;
}

int64_t context_budget::output_reserve() const {
  return std::min(limits.max_output_tokens, limits.context_window / 4);
}

int64_t context_budget::safety_buffer() const {
  return std::min<int64_t>(13000, limits.context_window / 10);
}

int64_t context_budget::compact_threshold() const {
  return limits.context_window - output_reserve() - safety_buffer();
}

int64_t context_budget::tool_result_budget() const { return compact_threshold() / 2; }

int64_t context_budget::preserve_budget() const { return compact_threshold() / 4; }

} // namespace troupe
