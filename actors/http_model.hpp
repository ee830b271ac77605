#pragma once
// The model client for HTTP providers (OpenAI-compatible, Anthropic): streams replies through
// the shared HTTP engine, retries what is worth retrying, and cancels on interrupt.

#include <chrono>
#include <cstdint>

#include "actors/http_engine.hpp"
#include "protocol/interfaces.hpp"
#include "providers/provider.hpp"

namespace caf {
class actor_system;
}

namespace troupe {

/// How an HTTP model client behaves.
struct http_model_config {
  provider_config provider;
  /// Retries after a retryable status or a connection failure before any byte (then: error).
  int32_t max_retries = 8;
  int32_t connect_timeout_ms = 10000;
  /// A reply that sends no byte for this long fails.
  int32_t idle_timeout_ms = 120000;
  /// Back-off: base * 2^attempt with ±25% jitter, at most max; Retry-After wins when sent.
  std::chrono::milliseconds base_retry_delay{500};
  std::chrono::milliseconds max_retry_delay{30000};
};

/// Spawns a model client that sends its requests through `engine`.
model_client_actor spawn_http_model(caf::actor_system& sys, http_model_config config,
                                    http_engine engine);

/// Returns how long to wait before retry number `attempt` (0-based), from the response's
/// retry-after-ms / retry-after headers when present, else exponential back-off with jitter.
std::chrono::milliseconds retry_delay(const http_model_config& config, int32_t attempt,
                                      const http_headers& headers, double jitter);

} // namespace troupe
