#pragma once
// How big a model's context is, how many tokens a message takes, and where the thresholds lie.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/message.hpp"
#include "protocol/model.hpp"

namespace troupe {

/// A model's context window and the output it is asked for, in tokens.
struct model_limits {
  int64_t context_window = 128000;
  int64_t max_output_tokens = 8192;
};

/// The built-in table: the limits of a model by its name ("claude-sonnet-4-5", "gpt-4.1",
/// "llama3.1:8b", …); an unknown model gets 128k/8k.
model_limits limits_for_model(std::string_view model);

/// List prices of a model, in US dollars per million tokens.
struct model_prices {
  double input = 0;
  double output = 0;
  double cache_read = 0;
  double cache_write = 0;
};

/// The built-in price table by model name; nothing for a model it does not know. Local models
/// (`ollama/…`) and the scripted provider cost nothing.
std::optional<model_prices> prices_for_model(std::string_view model);

/// What `usage` cost with `model`, in US dollars; nothing when the price is unknown.
std::optional<double> cost_usd(std::string_view model, const token_usage& usage);

/// A cost as shown to people: "$0.0123", or "unknown" when a price was missing.
std::string format_cost(double usd, bool known);

/// Fast token estimate of a text: one token per four bytes, rounded up.
int64_t estimate_tokens(std::string_view text);

/// Estimate of one message as a provider counts it: text, calls and a per-message overhead.
int64_t estimate_tokens(const message& m);

/// Estimate of the tool definitions sent with every request (native tool calling only).
int64_t estimate_tokens(const std::vector<tool_descriptor>& tools);

/// The thresholds one session works with, all in (calibrated) tokens.
struct context_budget {
  model_limits limits;

  /// Room kept free for the reply: the output asked for, at most a quarter of the window.
  int64_t output_reserve() const;
  /// Slack for the estimate's error: 13k tokens, at most a tenth of the window.
  int64_t safety_buffer() const;
  /// A request projected past this is compacted first: window − output reserve − buffer.
  int64_t compact_threshold() const;
  /// Tool results in the context past this get their oldest large ones elided.
  int64_t tool_result_budget() const;
  /// The recent messages a compaction keeps verbatim fit in this.
  int64_t preserve_budget() const;
};

} // namespace troupe
