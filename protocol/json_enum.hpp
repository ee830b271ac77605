#pragma once
// Strict enum <-> string mapping for JSON: an unknown name is an error, never a silent default.

#include <array>
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

template <class Enum, size_t N>
Enum enum_from_json(const enum_names<Enum, N>& names, const nlohmann::json& j, const char* what) {
  auto text = j.get<std::string>();
  for (auto& [v, name] : names)
    if (text == name)
      return v;
  throw nlohmann::json::other_error::create(501, std::string{"unknown "} + what + " '" + text + "'",
                                            &j);
}

} // namespace troupe::detail
