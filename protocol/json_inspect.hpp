#pragma once
// Lets nlohmann::json travel inside CAF messages: it is (de)serialised as its JSON text.

#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

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
    x = text.empty() ? json{} : json::parse(text, nullptr, false);
    return result;
  }
}

} // namespace nlohmann
