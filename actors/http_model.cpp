#include "actors/http_model.hpp"
#include "actors/http_retry.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

namespace troupe {

namespace {

using clock_type = std::chrono::steady_clock;

/// The generation in flight (a model client serves one step at a time).
struct generation {
  uint64_t serial = 0;
  caf::typed_response_promise<model_reply> promise;
  model_request request;
  step_actor requester;
  int32_t retries = 0;
  uint64_t transfer = 0;    ///< the transfer in flight, 0 while waiting to retry
  uint64_t retry_timer = 0; ///< the due_atom id that starts the next attempt
  uint64_t watch_timer = 0; ///< the due_atom id of the next deadline, silence and rate check
  // The attempt's clocks: its start, its last byte, and the stretch its rate is measured over.
  clock_type::time_point started;
  clock_type::time_point last_activity;
  clock_type::time_point window_start;
  int64_t window_bytes = 0;
  bool began = false;   ///< the reply's head (or a byte of it) arrived
  int64_t received = 0; ///< body bytes of this attempt
  std::string excerpt;  ///< the body's first bytes, quoted when the attempt fails
  int32_t status = 0;
  http_headers headers;
  std::string body; ///< a reply that is not an event stream (bounded by the engine's cap)
  std::unique_ptr<reply_decoder> decoder;
};

struct http_model_state {
  http_model_config config;
  http_engine engine;
  /// Asked before every attempt, told of a 429/529: the provider's pauses are the process's.
  provider_gate_actor gate;
  uint64_t sequence = 0;
  /// Counts generations: an admission that comes back for one that has ended is dropped.
  uint64_t generations = 0;
  std::unique_ptr<generation> current;
  /// The transfer of a reply that was whole at its closing event while its body had not ended:
  /// 0 once it ends. Its connection is busy until then, so it is given up (its socket closed)
  /// when the next attempt goes or the client ends: a server that holds bodies open after the
  /// closing event would otherwise leave one open socket per reply, each counted against the
  /// engine's connection cap, for as long as the engine's backstops allow (minutes).
  uint64_t finished_early = 0;
  std::mt19937 random{std::random_device{}()};

  ~http_model_state() {
    if (finished_early != 0)
      engine.cancel(finished_early);
  }
};

using self_ptr = http_model_actor::stateful_pointer<http_model_state>;

constexpr size_t excerpt_bytes = 200;

bool is_connection_failure(int32_t code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
      return true;
    default:
      return false;
  }
}

uint64_t next_id(self_ptr self) {
  // Actor ids are unique in the process; the low bits count this actor's requests.
  return (static_cast<uint64_t>(self->id()) << 24) | (++self->state.sequence & 0xffffff);
}

void finish(self_ptr self, model_reply reply) {
  auto& st = self->state;
  if (!st.current)
    return;
  st.current->promise.deliver(std::move(reply));
  st.current.reset();
}

// A transport failure says how far the reply got: bytes and events, and its first bytes.
model_reply transport_failure(const http_model_state& st, const generation& g, std::string what) {
  if (g.began) {
    what += " (after " + std::to_string(g.received) + " bytes";
    if (g.decoder)
      what += " in " + std::to_string(g.decoder->events()) + " events";
    what += ")";
  } else {
    what += " (before any byte of the reply)";
  }
  return bad_response(st.config.provider.kind, model_error_kind::transport, what, g.excerpt);
}

// Deadline, silence and rate are checked here, not left to curl: its low-speed limit averages
// over a window and notices a stalled stream only seconds late, and its errors cannot say which
// limit was hit. The check runs again at the earliest moment one of them could fail.
void schedule_watch(self_ptr self) {
  auto& st = self->state;
  auto& g = *st.current;
  auto idle = std::chrono::milliseconds{st.config.idle_timeout_ms};
  auto due = std::min(g.started + std::chrono::milliseconds{st.config.request_timeout_ms},
                      g.last_activity + idle);
  if (g.began && st.config.min_bytes_per_second > 0)
    due = std::min(due, g.window_start + idle);
  auto wait = std::chrono::ceil<std::chrono::milliseconds>(due - clock_type::now());
  g.watch_timer = next_id(self);
  self->delayed_send(self,
                     std::max(wait, std::chrono::milliseconds{0}) + std::chrono::milliseconds{1},
                     due_atom::value, g.watch_timer);
}

void send_attempt(self_ptr self) {
  auto& st = self->state;
  auto& g = *st.current;
  if (st.finished_early != 0)
    st.engine.cancel(std::exchange(st.finished_early, 0));
  auto call = build_request(st.config.provider, g.request);
  g.transfer = next_id(self);
  g.status = 0;
  g.headers.clear();
  g.body.clear();
  g.excerpt.clear();
  g.decoder.reset();
  g.began = false;
  g.received = 0;
  g.window_bytes = 0;
  http_request request{g.transfer,
                       std::move(call.url),
                       std::move(call.headers),
                       std::move(call.body),
                       st.config.connect_timeout_ms,
                       st.config.idle_timeout_ms,
                       st.config.request_timeout_ms,
                       st.config.max_reply_bytes};
  st.engine.submit(std::move(request), self);
  g.started = g.last_activity = g.window_start = clock_type::now();
  // A whole (non-streamed) reply is silent until it is complete: the idle timeout bounds the
  // wait for it all the same.
  schedule_watch(self);
}

template <class F>
void guarded(self_ptr self, F&& f);

// Sends the next attempt once the provider's gate lets it (at once unless the provider asked
// the process for a pause).
void start_attempt(self_ptr self) {
  auto& st = self->state;
  if (!st.gate) {
    send_attempt(self);
    return;
  }
  auto serial = st.current->serial;
  auto go = [self, serial] {
    auto& state = self->state;
    // Cancelled, or finished, while it waited.
    if (state.current && state.current->serial == serial && state.current->transfer == 0)
      guarded(self, [&] { send_attempt(self); });
  };
  self->request(st.gate, caf::infinite, admit_atom::value, st.config.provider.base_url)
    .then([go](bool) { go(); }, [go](caf::error&) { go(); }); // no gate: no pause to wait for
}

// Retries when attempts are left; returns false when the caller must fail instead.
bool retry(self_ptr self, int32_t status, const std::string& why) {
  auto& st = self->state;
  auto& g = *st.current;
  if (g.retries >= st.config.max_retries)
    return false;
  std::uniform_real_distribution<double> jitter{-0.25, 0.25};
  auto delay = retry_delay(st.config, g.retries, g.headers, jitter(st.random));
  ++g.retries;
  g.transfer = 0;
  g.retry_timer = next_id(self);
  spdlog::info("{}: retry {}/{} in {} ms: {}", to_string(st.config.provider.kind), g.retries,
               st.config.max_retries, delay.count(), why);
  generation_progress progress;
  progress.kind = progress_kind::api_retry;
  progress.attempt = g.retries;
  progress.max_retries = st.config.max_retries;
  progress.delay_ms = delay.count();
  progress.status = status;
  progress.error = why;
  self->send(g.requester, std::move(progress));
  // Too many requests, or overloaded: the provider's answer holds for every client of the
  // process, not this one alone.
  if ((status == 429 || status == 529) && st.gate)
    self->send(st.gate, pause_atom::value, st.config.provider.base_url,
               static_cast<int64_t>(delay.count()));
  self->delayed_send(self, delay, due_atom::value, g.retry_timer);
  return true;
}

// The reply has begun: its rate is measured from here.
void mark_begun(generation& g, clock_type::time_point now) {
  if (g.began)
    return;
  g.began = true;
  g.window_start = now;
  g.window_bytes = 0;
}

void on_head(self_ptr self, http_response_head& head) {
  auto& st = self->state;
  if (!st.current || st.current->transfer != head.id)
    return;
  auto& g = *st.current;
  g.last_activity = clock_type::now();
  mark_begun(g, g.last_activity);
  g.status = head.status;
  g.headers = std::move(head.headers);
  auto* type = find_header(g.headers, "content-type");
  if (st.config.provider.stream && g.status == 200 && type != nullptr &&
      type->find("text/event-stream") != std::string::npos)
    g.decoder = make_stream_decoder(st.config.provider.kind,
                                    static_cast<size_t>(st.config.max_event_bytes));
}

void on_chunk(self_ptr self, http_body_chunk& chunk) {
  auto& st = self->state;
  if (!st.current || st.current->transfer != chunk.id)
    return;
  auto& g = *st.current;
  g.last_activity = clock_type::now();
  mark_begun(g, g.last_activity);
  auto size = static_cast<int64_t>(chunk.data.size());
  g.received += size;
  g.window_bytes += size;
  if (g.excerpt.size() < excerpt_bytes)
    g.excerpt.append(chunk.data, 0, excerpt_bytes - g.excerpt.size());
  if (!g.decoder) {
    g.body += chunk.data; // the engine stops the transfer at max_reply_bytes
    return;
  }
  auto text = g.decoder->feed(chunk.data);
  if (g.decoder->failed()) { // no use reading on: an oversized or malformed event
    st.engine.cancel(g.transfer);
    finish(self, g.decoder->finish());
    return;
  }
  if (!text.empty()) {
    generation_progress progress;
    progress.kind = progress_kind::text_delta;
    progress.text = std::move(text);
    self->send(g.requester, std::move(progress));
  }
  // The closing event makes the reply whole: the step goes on now, not once the body's last
  // bytes (a chunked body's terminator, often a write of its own) have come. The transfer
  // still reads them: when they come at once (as they mostly do) the connection is idle again
  // before the next request and is reused.
  if (g.decoder->complete()) {
    st.finished_early = g.transfer;
    finish(self, g.decoder->finish());
  }
}

model_reply complete_reply(http_model_state& st, generation& g) {
  auto kind = st.config.provider.kind;
  if (g.decoder)
    return g.decoder->finish();
  auto* type = find_header(g.headers, "content-type");
  if (type != nullptr && type->find("json") == std::string::npos)
    return bad_response(kind, model_error_kind::transport,
                        "a 200 response that is neither JSON nor an event stream (content-type " +
                          *type + ")",
                        g.body);
  return parse_reply(kind, g.body);
}

// The provider answered with an error status (its head has come).
bool answered_with_error(const generation& g) {
  return g.status != 0 && g.status != 200;
}

// A reply that is not a 200, reported from its body and retried as that status would be. A
// body that never ended (it stalled, trickled past a limit, or flooded past --max-reply-bytes)
// is still the status's news: `unfinished` says which limit it ran into.
void finish_with_status(self_ptr self, const std::string& unfinished = {}) {
  auto& st = self->state;
  auto& g = *st.current;
  auto reply = parse_error(st.config.provider.kind, g.status, g.body);
  if (!unfinished.empty())
    reply.error_message += " (its body unfinished: " + unfinished + ")";
  if (is_retryable_status(g.status) && retry(self, g.status, reply.error_message))
    return;
  finish(self, std::move(reply));
}

void on_done(self_ptr self, http_transfer_done& done) {
  auto& st = self->state;
  if (done.id == st.finished_early)
    st.finished_early = 0; // ended by itself: nothing to give up
  if (!st.current || st.current->transfer != done.id)
    return;
  auto& g = *st.current;
  if (!done.error.empty()) {
    if (!done.received_bytes && is_connection_failure(done.curl_code) &&
        retry(self, 0, "connection failed: " + done.error))
      return;
    auto what = done.curl_code == CURLE_FILESIZE_EXCEEDED
                  ? done.error + " (--max-reply-bytes)"
                  : "request to " + st.config.provider.base_url + " failed: " + done.error;
    if (answered_with_error(g))
      finish_with_status(self, what);
    else
      finish(self, transport_failure(st, g, what));
    return;
  }
  if (g.status == 200)
    finish(self, complete_reply(st, g));
  else
    finish_with_status(self);
}

// Fails the attempt when it ran past its deadline, went silent or slowed below the minimum
// rate. Before the reply began (no head yet) a timeout is retried like a connection failure: the
// request may simply be lost. Once the provider has answered it is generating, and billing, so
// the reply is abandoned rather than asked for twice.
void check_time(self_ptr self) {
  auto& st = self->state;
  auto& g = *st.current;
  auto& config = st.config;
  auto now = clock_type::now();
  auto idle = std::chrono::milliseconds{config.idle_timeout_ms};
  std::string what;
  if (now >= g.started + std::chrono::milliseconds{config.request_timeout_ms}) {
    what = "no complete reply within " + std::to_string(config.request_timeout_ms / 1000) +
           " s (--request-timeout)";
  } else if (now >= g.last_activity + idle) {
    what = "the reply stalled: no data for " + std::to_string(config.idle_timeout_ms / 1000) +
           " s (--stream-idle-timeout)";
  } else if (g.began && config.min_bytes_per_second > 0 && now >= g.window_start + idle) {
    auto wanted = int64_t{config.min_bytes_per_second} * config.idle_timeout_ms / 1000;
    if (g.window_bytes < wanted)
      what = "the reply is too slow: " + std::to_string(g.window_bytes) + " bytes in " +
             std::to_string(config.idle_timeout_ms / 1000) + " s, below " +
             std::to_string(config.min_bytes_per_second) + " bytes/s (--min-transfer-rate)";
    g.window_start = now;
    g.window_bytes = 0;
  }
  if (what.empty()) {
    schedule_watch(self);
    return;
  }
  st.engine.cancel(g.transfer);
  if (answered_with_error(g)) {
    finish_with_status(self, what);
    return;
  }
  if (!g.began && retry(self, 0, what))
    return;
  finish(self, transport_failure(st, g, what));
}

// A reply shaped in a way no decoder expected must fail the generation, not the actor: an
// exception escaping a handler would kill it and leave the step waiting.
template <class F>
void guarded(self_ptr self, F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    auto& st = self->state;
    if (!st.current)
      return;
    if (st.current->transfer != 0)
      st.engine.cancel(st.current->transfer);
    finish(self, bad_response(st.config.provider.kind, model_error_kind::transport,
                              std::string{"unexpected reply ("} + e.what() + ")",
                              st.current->excerpt));
  }
}

http_model_actor::behavior_type http_model(self_ptr self, http_model_config config,
                                           http_engine engine) {
  self->state.config = std::move(config);
  self->state.engine = std::move(engine);
  self->state.gate = self->state.engine.gate();
  return {
    [=](generate_atom, model_request& request) -> caf::result<model_reply> {
      auto& st = self->state;
      if (st.current) {
        model_reply busy;
        busy.error = model_error_kind::request;
        busy.error_message = "a generation is already running for this session";
        return busy;
      }
      st.current = std::make_unique<generation>();
      auto& g = *st.current;
      g.serial = ++st.generations;
      // Before make_response_promise, which takes the sender out of the current message.
      g.requester = caf::actor_cast<step_actor>(self->current_sender());
      g.promise = self->make_response_promise<model_reply>();
      g.request = std::move(request);
      auto promise = g.promise;
      guarded(self, [&] { start_attempt(self); });
      return promise;
    },
    [=](cancel_atom) {
      auto& st = self->state;
      if (!st.current)
        return;
      if (st.current->transfer != 0)
        st.engine.cancel(st.current->transfer);
      model_reply interrupted;
      interrupted.error = model_error_kind::interrupted;
      interrupted.error_message = "generation interrupted";
      finish(self, std::move(interrupted));
    },
    [=](due_atom, uint64_t timer) {
      auto& st = self->state;
      if (!st.current)
        return;
      auto& g = *st.current;
      if (g.transfer == 0 && g.retry_timer == timer) {
        start_attempt(self);
        return;
      }
      if (g.transfer != 0 && g.watch_timer == timer)
        check_time(self);
    },
    [=](http_response_head& head) { guarded(self, [&] { on_head(self, head); }); },
    [=](http_body_chunk& chunk) { guarded(self, [&] { on_chunk(self, chunk); }); },
    [=](http_transfer_done& done) { guarded(self, [&] { on_done(self, done); }); },
  };
}

} // namespace

model_client_actor spawn_http_model(caf::actor_system& sys, http_model_config config,
                                    http_engine engine) {
  return sys.spawn(http_model, std::move(config), std::move(engine));
}

} // namespace troupe
