#pragma once
// The HTTP engine: one loop on its own thread carries every model request of the process, so a
// thousand agents streaming at once need one thread, not a thousand. Plain http to a local
// server goes through its own client (actors/plain_http.hpp); the rest through curl_multi.

#include <memory>
#include <string>

#include <caf/actor.hpp>

#include "protocol/expected.hpp"
#include "protocol/interfaces.hpp"

namespace caf {
class actor_system;
}

namespace troupe {

/// The value of a response head's header (named in lowercase, as the engine gives them), or
/// null when it has none.
const std::string* find_header(const http_headers& headers, const std::string& name);

/// A handle to the engine. Copies share the engine; it runs until stop() or system shutdown.
class http_engine {
public:
  /// Starts loading libcurl (`library`: a file name or path for dlopen) and its global set-up
  /// (~10 ms) on a helper thread, so that it overlaps other start-up work, when a request to
  /// `url` will need it. Optional: the engine waits for it or does it itself. The first library
  /// named is the one loaded.
  static void warm_up(const std::string& library, const std::string& url);

  /// False when the engine's own client carries requests to `url` (plain http to a loopback or
  /// numeric address, no proxy set): such a process never loads libcurl.
  static bool needs_libcurl(const std::string& url);

  /// When requests to `url` need libcurl, loads it now (or waits for warm_up's load) and says
  /// why it is unusable, if it is: a model's launch fails with that, before its session starts.
  static expected<bool> check_libcurl_for(const std::string& url, const std::string& library);

  /// Starts the engine on a thread of its own (a detached actor). libcurl (the one warm_up
  /// named, else `library`) is loaded on the first request that needs it; if it cannot be,
  /// that request fails with the reason.
  static expected<http_engine> start(caf::actor_system& sys, const std::string& library);

  /// Starts a transfer; its head, chunks and end go to `requester` as messages.
  void submit(http_request request, http_client_actor requester) const;

  /// Drops the transfer with this id; no further message about it is sent.
  void cancel(uint64_t id) const;

  /// Stops the engine; transfers in flight are dropped.
  void stop() const;

  /// The gate every model client sending through this engine asks before a request, and tells
  /// of a provider's pause (429, 529).
  provider_gate_actor gate() const;

private:
  struct handle;
  std::shared_ptr<handle> handle_;
};

} // namespace troupe
