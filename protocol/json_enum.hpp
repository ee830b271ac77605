#pragma once
// Strict enum <-> string mapping for JSON: an unknown name is an error, never a silent default.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

namespace troupe::detail {

template <class Enum, size_t N>
using enum_names = std::array<std::pair<Enum, const char*>, N>;

template <class Enum, size_t N>
const char* enum_to_name(const enum_names<Enum, N>& names, Enum value) {
  for (auto& [v, name] : names)
    if (v == value)
      return name;
  return "unknown";
}

/// The value spelled `text`, or null for a spelling not in `names`.
template <class Enum, size_t N>
std::optional<Enum> enum_from_name(const enum_names<Enum, N>& names, std::string_view text) {
  for (auto& [v, name] : names)
    if (text == name)
      return v;
  return std::nullopt;
}

template <class Enum, size_t N>
Enum enum_from_json(const enum_names<Enum, N>& names, const nlohmann::json& j, const char* what) {
  auto text = j.get<std::string>();
  if (auto value = enum_from_name(names, text))
    return *value;
  throw nlohmann::json::other_error::create(501, std::string{"unknown "} + what + " '" + text + "'",
                                            &j);
}

} // namespace troupe::detail
