#pragma once
// Parsing JSON that comes from outside with a bound on its nesting depth. nlohmann's parser
// is iterative, but copying, comparing, dumping and converting a value recurse once per level:
// a 100,000-deep array overflows the stack wherever the tree goes next. So deep text is
// refused before a tree is built.

#include <cstddef>
#include <string>
#include <limits>
#include <string_view>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "protocol/expected.hpp"

namespace troupe {

/// The deepest nesting of arrays and objects troupe accepts in JSON it did not write: model
/// replies and tool-call arguments, scripts, settings files, hook output, control messages.
inline constexpr size_t max_json_depth = 512;

/// The bound for troupe's own records (transcript lines, queue entries, state files), which
/// wrap a value of max_json_depth (a tool call's input) in a few levels of their own.
inline constexpr size_t max_record_depth = max_json_depth + 16;

/// The failure message of parse_json_bounded for text that is not JSON at all (callers with a
/// message of their own for that case add only the other, a depth failure).
inline constexpr const char* invalid_json_message = "not valid JSON";

/// Returns how deep arrays and objects nest in text (brackets outside strings), at most
/// limit + 1: the scan stops as soon as it passes limit. Linear, no allocation.
size_t json_nesting_depth(std::string_view text, size_t limit);

/// Parses text as one JSON value nested at most max_depth deep. Fails with "JSON nested deeper
/// than N levels" before any tree is built, or with invalid_json_message.
expected<nlohmann::json> parse_json_bounded(std::string_view text,
                                            size_t max_depth = max_json_depth);

/// Returns whether get<T>() converts value without undefined behaviour: a float converts only
/// inside T's range (1e20 into an int64_t is undefined), any other value as nlohmann says.
template <class T>
bool number_fits(const nlohmann::json& value) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (value.is_number_float()) {
      double d = value.get<double>();
      return d >= static_cast<double>(std::numeric_limits<T>::min()) &&
             d < static_cast<double>(std::numeric_limits<T>::max()) + 1.0;
    }
  }
  return true;
}

/// Returns the value at key as T, fallback when missing or null; throws nlohmann's type_error
/// when it is of another type or a number that does not fit T.
template <class T>
T value_at(const nlohmann::json& j, const char* key, T fallback) {
  auto i = j.find(key);
  if (i == j.end() || i->is_null())
    return fallback;
  if (!number_fits<T>(*i))
    throw nlohmann::json::type_error::create(302, std::string{key} + " is out of range", &j);
  return i->template get<T>();
}

} // namespace troupe
