#pragma once
// How --model (or TROUPE_MODEL, or the session's recorded model) becomes a provider, an
// endpoint checked before any request, a key from the environment and a tool format.

#include <filesystem>
#include <optional>
#include <string>

#include "orchestrator/run_command.hpp"
#include "orchestrator/run_flags.hpp"
#include "protocol/expected.hpp"

namespace troupe {

/// Claude Code's aliases: `sonnet`, `opus` and `haiku` name these Anthropic models.
inline constexpr const char* sonnet_model = "claude-sonnet-4-5";
inline constexpr const char* opus_model = "claude-opus-4-5";
inline constexpr const char* haiku_model = "claude-haiku-4-5";

/// A model spec with its provider: one that has it (`openai/…`, `scripted:…`) as it is;
/// Claude Code's aliases (sonnet, opus, haiku) and claude-* names are Anthropic's, gpt-*,
/// chatgpt-*, o1*, o3* and o4* names OpenAI's; any other name is an error naming the forms.
expected<std::string> qualified_model_spec(const std::string& model);

/// The base URL an API model spec's requests would go to, from the environment as it stands
/// (unchecked); nothing for a scripted or unknown spec.
std::optional<std::string> api_base_url(const std::string& model);

/// Resolves one model spec the way --model is resolved: the provider, its endpoint and key
/// from the environment, and the tool format.
expected<model_choice> resolve_model_spec(const std::string& model, const run_flags& flags);

/// A scripted:PATH spec with a relative PATH made absolute from `base`; any other spec as is.
std::string anchored_model_spec(const std::string& spec, const std::filesystem::path& base);

/// Checks --fallback-model (a model spec, not the run's own model) and records it in
/// `settings` (resolved after the run's model).
expected<bool> resolve_fallback_model(const run_flags& flags, run_settings& settings);

/// Picks the run's model (--model, else the resumed session's, else TROUPE_MODEL, else the
/// provider whose API key is set) and fills in `settings`' model fields.
expected<bool> resolve_model(const run_flags& flags, run_settings& settings);

} // namespace troupe
