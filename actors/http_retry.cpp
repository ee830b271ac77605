#include "actors/http_retry.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>

namespace troupe {

namespace {

// A delay header's number: the whole value must be one (HTTP-dates and garbage are ignored),
// never negative or NaN; +inf stands for "very long" and is capped by the caller.
std::optional<double> parse_delay(const std::string& value) {
  auto first = value.find_first_not_of(" \t");
  if (first == std::string::npos)
    return std::nullopt;
  const char* start = value.c_str() + first;
  char* end = nullptr;
  double number = std::strtod(start, &end);
  while (end != nullptr && (*end == ' ' || *end == '\t'))
    ++end;
  if (end == start || end == nullptr || *end != '\0' || std::isnan(number) || number < 0)
    return std::nullopt;
  return number;
}

} // namespace

std::chrono::milliseconds retry_delay(const http_model_config& config, int32_t attempt,
                                      const http_headers& headers, double jitter) {
  auto cap = static_cast<double>(config.max_retry_delay.count());
  // Clamped as doubles, before any conversion: inf or 1e300 seconds is the longest back-off,
  // never an overflowed integer.
  auto capped = [cap](double ms) {
    return std::chrono::milliseconds{static_cast<int64_t>(std::clamp(ms, 0.0, cap))};
  };
  for (auto& [name, value] : headers) {
    if (name != "retry-after-ms" && name != "retry-after")
      continue;
    if (auto number = parse_delay(value))
      return capped(name == "retry-after-ms" ? *number : *number * 1000);
  }
  auto base = static_cast<double>(config.base_retry_delay.count()) *
              std::pow(2.0, static_cast<double>(std::min(attempt, 20)));
  // The jitter spreads retries out, but never past the cap.
  return capped(std::min(cap, base) * (1.0 + jitter));
}

} // namespace troupe
