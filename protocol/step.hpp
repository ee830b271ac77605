#pragma once
// What the session hands a step, and what the step hands back.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

#include "protocol/message.hpp"
#include "protocol/model.hpp"

namespace troupe {

/// One step to carry out: the context to send and the step's number in its turn.
struct step_request {
  context_snapshot context;
  int32_t step_number = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_request& x) {
  return f(caf::meta::type_name("step_request"), x.context, x.step_number);
}

/// How a step ended.
enum class step_status : uint8_t {
  replied,     ///< the model replied; tool_messages answer every call it made
  interrupted, ///< cancelled; every call already issued has an (interrupted) result
  failed,      ///< the model call failed; see error fields
};

/// The result of one step: the reply, its tool results in call order, and why it ended.
struct step_outcome {
  step_status status = step_status::replied;
  message reply;
  std::vector<message> tool_messages;
  token_usage usage;
  model_error_kind error = model_error_kind::none;
  std::string error_message;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_outcome& x) {
  return f(caf::meta::type_name("step_outcome"), x.status, x.reply, x.tool_messages, x.usage,
           x.error, x.error_message);
}

} // namespace troupe
