#pragma once
// The answer of the person asked whether a tool call may run.

#include <cstdint>
#include <string>

#include <caf/meta/type_name.hpp>
#include <nlohmann/json.hpp>

#include "protocol/json_inspect.hpp"

namespace troupe {

/// What the person asked about a tool call answered. Each has one spelling (to_string).
enum class permission_answer : uint8_t {
  yes,    ///< "yes": run this call
  no,     ///< "no": decline it; control goes back to the user
  always, ///< "always": run it, and calls like it for the rest of the session
};

/// Returns the spelling of an answer ("yes", "no", "always").
const char* to_string(permission_answer a);

/// What an asker decided about a call: the answer, and what a client that edits or explains
/// (a stream-json client's can_use_tool) adds to it.
struct permission_verdict {
  permission_answer answer = permission_answer::no;
  /// yes or always: the input to run instead of the one asked about; null: as asked.
  nlohmann::json updated_input;
  /// no: the refusal the model reads, and the turn goes on (unless `interrupt`); empty: the
  /// user declined, and control goes back to them.
  std::string message;
  bool interrupt = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, permission_verdict& x) {
  return f(caf::meta::type_name("permission_verdict"), x.answer, x.updated_input, x.message,
           x.interrupt);
}

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
