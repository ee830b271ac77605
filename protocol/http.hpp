#pragma once
// Messages between the HTTP engine and the actors whose requests it carries.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <caf/meta/type_name.hpp>

namespace troupe {

using http_headers = std::vector<std::pair<std::string, std::string>>;

/// One request for the engine. `id` is chosen by the requester and unique in the process.
struct http_request {
  uint64_t id = 0;
  std::string url;
  http_headers headers;
  std::string body;
  int32_t connect_timeout_ms = 10000;
  /// The transfer fails when no byte arrives for this long.
  int32_t idle_timeout_ms = 120000;
  /// The transfer fails when it is not complete after this long (0: no limit of its own, e.g.
  /// an MCP call, which its own timeout ends).
  int32_t request_timeout_ms = 600000;
  /// The transfer fails (code CURLE_FILESIZE_EXCEEDED) when its body would grow past this; no
  /// chunk past it is sent.
  int64_t max_body_bytes = int64_t{64} << 20;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, http_request& x) {
  return f(caf::meta::type_name("http_request"), x.id, x.url, x.headers, x.body,
           x.connect_timeout_ms, x.idle_timeout_ms, x.request_timeout_ms, x.max_body_bytes);
}

/// The status line and headers of a response (names lowercased), before its body.
struct http_response_head {
  uint64_t id = 0;
  int32_t status = 0;
  http_headers headers;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, http_response_head& x) {
  return f(caf::meta::type_name("http_response_head"), x.id, x.status, x.headers);
}

/// Body bytes as they arrive.
struct http_body_chunk {
  uint64_t id = 0;
  std::string data;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, http_body_chunk& x) {
  return f(caf::meta::type_name("http_body_chunk"), x.id, x.data);
}

/// The end of a transfer: complete (`error` empty) or failed.
struct http_transfer_done {
  uint64_t id = 0;
  /// The transport's error, empty when the response arrived whole.
  std::string error;
  /// libcurl's result code (0 when complete).
  int32_t curl_code = 0;
  /// True when any byte of the response arrived (a retry could repeat side effects).
  bool received_bytes = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, http_transfer_done& x) {
  return f(caf::meta::type_name("http_transfer_done"), x.id, x.error, x.curl_code,
           x.received_bytes);
}

} // namespace troupe
