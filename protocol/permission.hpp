#pragma once
// The answer of the person asked whether a tool call may run.

#include <cstdint>

#include <nlohmann/json.hpp>

namespace troupe {

/// What the person asked about a tool call answered. Each has one spelling (to_string).
enum class permission_answer : uint8_t {
  yes,    ///< "yes": run this call
  no,     ///< "no": decline it; control goes back to the user
  always, ///< "always": run it, and calls like it for the rest of the session
};

/// Returns the spelling of an answer ("yes", "no", "always").
const char* to_string(permission_answer a);

/// Why a call was refused, as far as how the run ends depends on it.
enum class denial_cause : uint8_t {
  refused,   ///< "refused": a rule, the mode's default, a headless ask, nobody answering, the user
  plan_mode, ///< "plan_mode": plan mode runs read-only calls only; the model is to present its
             ///< plan, which ends the run `completed`
};

/// Returns the spelling of a cause ("refused", "plan_mode").
const char* to_string(denial_cause c);

void to_json(nlohmann::json& j, const permission_answer& x);
void from_json(const nlohmann::json& j, permission_answer& x);
void to_json(nlohmann::json& j, const denial_cause& x);
void from_json(const nlohmann::json& j, denial_cause& x);

} // namespace troupe
