#pragma once
// Lets nlohmann::json travel inside CAF messages: it is (de)serialised as its JSON text.

#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "protocol/bounded_json.hpp"

namespace nlohmann {

/// Inspects a JSON value as its serialised text, so remote nodes can read it too.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, json& x) {
  if constexpr (Inspector::reads_state) {
    std::string text = x.dump();
    return f(text);
  } else {
    std::string text;
    auto result = f(text);
    // A peer's text is bounded like any JSON from outside; what does not parse arrives as a
    // discarded value (never a tree too deep to copy).
    if (text.empty()) {
      x = json{};
    } else {
      auto parsed = troupe::parse_json_bounded(text, troupe::max_record_depth);
      x = parsed ? std::move(*parsed) : json(json::value_t::discarded);
    }
    return result;
  }
}

} // namespace nlohmann
