#pragma once
// How --model (or TROUPE_MODEL, or the session's recorded model) becomes a provider, an
// endpoint checked before any request, a key from the environment and a tool format.

#include <filesystem>
#include <string>

#include "orchestrator/run_command.hpp"
#include "orchestrator/run_flags.hpp"
#include "protocol/expected.hpp"

namespace troupe {

/// Resolves one model spec the way --model is resolved: the provider, its endpoint and key
/// from the environment, and the tool format.
expected<model_choice> resolve_model_spec(const std::string& model, const run_flags& flags);

/// A scripted:PATH spec with a relative PATH made absolute from `base`; any other spec as is.
std::string anchored_model_spec(const std::string& spec, const std::filesystem::path& base);

/// Picks the run's model (--model, else the resumed session's, else TROUPE_MODEL, else the
/// provider whose API key is set) and fills in `settings`' model fields.
expected<bool> resolve_model(const run_flags& flags, run_settings& settings);

} // namespace troupe
