#include "context/token_budget.hpp"

#include <algorithm>
#include <cstdio>

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

struct price_entry {
  std::string_view prefix;
  model_prices prices;
};

// List prices (USD per million tokens: input, output, cache read, cache write); the first
// matching prefix wins, so longer ones come first within a family.
constexpr price_entry price_table[] = {
  {"claude-opus-4-5", {5, 25, 0.5, 6.25}},
  {"claude-opus-4", {15, 75, 1.5, 18.75}},
  {"claude-3-opus", {15, 75, 1.5, 18.75}},
  {"claude-sonnet", {3, 15, 0.3, 3.75}},
  {"claude-3-7-sonnet", {3, 15, 0.3, 3.75}},
  {"claude-3-5-sonnet", {3, 15, 0.3, 3.75}},
  {"claude-haiku-4", {1, 5, 0.1, 1.25}},
  {"claude-3-5-haiku", {0.8, 4, 0.08, 1}},
  {"claude-3-haiku", {0.25, 1.25, 0.03, 0.3}},
  {"gpt-4.1-nano", {0.1, 0.4, 0.025, 0}},
  {"gpt-4.1-mini", {0.4, 1.6, 0.1, 0}},
  {"gpt-4.1", {2, 8, 0.5, 0}},
  {"gpt-4o-mini", {0.15, 0.6, 0.075, 0}},
  {"gpt-4o", {2.5, 10, 1.25, 0}},
  {"gpt-5-nano", {0.05, 0.4, 0.005, 0}},
  {"gpt-5-mini", {0.25, 2, 0.025, 0}},
  {"gpt-5", {1.25, 10, 0.125, 0}},
  {"o4-mini", {1.1, 4.4, 0.275, 0}},
  {"o3-mini", {1.1, 4.4, 0.55, 0}},
  {"o3", {2, 8, 0.5, 0}},
  {"o1", {15, 60, 7.5, 0}},
};

} // namespace

std::optional<model_prices> prices_for_model(std::string_view model) {
  if (model.rfind("scripted:", 0) == 0 || model.rfind("ollama/", 0) == 0)
    return model_prices{};
  if (auto slash = model.rfind('/'); slash != std::string_view::npos)
    model = model.substr(slash + 1);
  for (const auto& entry : price_table)
    if (model.substr(0, entry.prefix.size()) == entry.prefix)
      return entry.prices;
  return std::nullopt;
}

std::optional<double> cost_usd(std::string_view model, const token_usage& usage) {
  auto prices = prices_for_model(model);
  if (!prices)
    return std::nullopt;
  auto per_token = [](double per_million) { return per_million / 1e6; };
  return static_cast<double>(usage.input_tokens) * per_token(prices->input) +
         static_cast<double>(usage.output_tokens) * per_token(prices->output) +
         static_cast<double>(usage.cache_read_tokens) * per_token(prices->cache_read) +
         static_cast<double>(usage.cache_write_tokens) * per_token(prices->cache_write);
}

model_limits limits_for_model(std::string_view model) {
  // "anthropic/claude-…", "openrouter/openai/gpt-4o": the last path element names the model.
  if (auto slash = model.rfind('/'); slash != std::string_view::npos)
    model = model.substr(slash + 1);
  for (const auto& entry : model_table)
    if (model.substr(0, entry.prefix.size()) == entry.prefix)
      return entry.limits;
  return model_limits{};
}

std::string format_cost(double usd, bool known) {
  if (!known)
    return "unknown";
  char text[32];
  std::snprintf(text, sizeof text, "$%.4f", usd);
  return text;
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
