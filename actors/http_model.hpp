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
  /// A reply (streamed or whole) that sends no byte for this long fails.
  int32_t idle_timeout_ms = 120000;
  /// A reply not complete this long after its request was sent fails (each attempt has its
  /// own clock): 10 minutes, as long as Claude Code's default API timeout.
  int32_t request_timeout_ms = 600000;
  /// Each idle_timeout_ms-long stretch of a reply, from its first byte, must bring at least
  /// this many bytes per second (0: no check). 32 B/s is about one event every 6 s: below any
  /// model that is producing tokens, above a stream that only drips.
  int32_t min_bytes_per_second = 32;
  /// The most bytes of one reply's body (as received, events and all).
  int64_t max_reply_bytes = int64_t{64} << 20;
  /// The most bytes of one server-sent event.
  int64_t max_event_bytes = static_cast<int64_t>(default_max_event_bytes);
  /// Back-off: base * 2^attempt with ±25% jitter, at most max; Retry-After wins when sent
  /// (also at most max).
  std::chrono::milliseconds base_retry_delay{500};
  std::chrono::milliseconds max_retry_delay{30000};
};

/// Spawns a model client that sends its requests through `engine`.
model_client_actor spawn_http_model(caf::actor_system& sys, http_model_config config,
                                    http_engine engine);

} // namespace troupe
