#pragma once
// HTTP/1.1 over plain TCP to a loopback or numeric address: the engine's own client for local
// model servers (ollama, llama.cpp, vLLM, LM Studio, the tests' fake server). Such a run never
// loads libcurl (about 30 libraries: ~6 ms of dynamic linking and ~5 MB resident) and pays no
// easy-handle set-up per request. Everything else (https, host names, a proxy in the
// environment, credentials in the URL, TROUPE_HTTP_CLIENT=libcurl) goes through libcurl.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "protocol/http.hpp"
#include "protocol/interfaces.hpp"

namespace troupe {

/// True when the engine's own client carries requests to `url`: an http:// URL whose host is
/// an IP address or `localhost`, without credentials, while no proxy variable is set and
/// TROUPE_HTTP_CLIENT is not `libcurl`.
bool plain_http_reaches(const std::string& url);

/// The requests the engine carries itself. It shares the engine's epoll set: the engine hands
/// it the events of the descriptors it owns and asks it for its next deadline. Its messages to
/// requesters are those libcurl's transfers send (head, chunks, done with a libcurl code).
class plain_http_client {
public:
  using clock_type = std::chrono::steady_clock;

  /// `connection_cap`: the most sockets open at once; requests past it wait for one.
  plain_http_client(int epoll_fd, long connection_cap);
  ~plain_http_client();
  plain_http_client(const plain_http_client&) = delete;
  plain_http_client& operator=(const plain_http_client&) = delete;

  /// Starts `request` if plain_http_reaches its URL; false (and nothing taken) otherwise.
  bool add(http_request& request, http_client_actor& requester);

  /// Drops the transfer with this id; false when it is not one of this client's.
  bool cancel(uint64_t id);

  /// True when `fd` is one of this client's sockets.
  bool owns(int fd) const;

  /// Works on `fd` after epoll reported `events` for it.
  void on_ready(int fd, uint32_t events);

  /// When on_time() next has something to do, if ever.
  std::optional<clock_type::time_point> next_deadline() const;

  /// Fails the transfers past a deadline.
  void on_time();

private:
  struct state;
  std::unique_ptr<state> state_;
};

} // namespace troupe
