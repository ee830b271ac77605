#pragma once
// When an HTTP model client retries: exponential back-off with jitter, or what the provider's
// retry-after-ms / retry-after headers ask for, never longer than the configured cap.

#include <chrono>
#include <cstdint>

#include "actors/http_model.hpp"
#include "protocol/http.hpp"

namespace troupe {

/// Returns how long to wait before retry number `attempt` (0-based): a valid retry-after-ms or
/// retry-after header (seconds, integer or fractional) when the response sent one, else
/// base * 2^attempt * (1 + jitter); always between 0 and config.max_retry_delay. A negative, NaN
/// or unparsable header is ignored; an infinite or huge one gives the cap.
std::chrono::milliseconds retry_delay(const http_model_config& config, int32_t attempt,
                                      const http_headers& headers, double jitter);

} // namespace troupe
