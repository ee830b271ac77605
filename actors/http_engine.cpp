#include "actors/http_engine.hpp"
#include "actors/provider_gate.hpp"

#include "actors/curl_library.hpp"
#include "actors/plain_http.hpp"

#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <optional>
#include <cctype>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/after.hpp>
#include <caf/blocking_actor.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

namespace troupe {

const std::string* find_header(const http_headers& headers, const std::string& name) {
  for (auto& [key, value] : headers)
    if (key == name)
      return &value;
  return nullptr;
}

namespace {

// The engine sleeps in epoll_wait; senders wake it through this eventfd after queueing a
// message. Whoever lets go last closes it, so the thread never waits on a closed descriptor.
struct wake_signal {
  int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ~wake_signal() { close(fd); }
  void notify() const {
    uint64_t one = 1;
    [[maybe_unused]] auto n = write(fd, &one, sizeof one);
  }
  void clear() const {
    uint64_t count = 0;
    [[maybe_unused]] auto n = read(fd, &count, sizeof count);
  }
};

using engine_atom = caf::atom_constant<caf::atom("httpreq")>;

/// One transfer in flight; owned by the engine thread.
struct transfer {
  const curl_functions* curl = nullptr;
  uint64_t id = 0;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  std::string body;
  http_client_actor requester;
  http_headers response_headers;
  bool head_sent = false;
  bool received_bytes = false;
  int64_t body_bytes = 0;
  int64_t max_body_bytes = 0;
  bool over_limit = false; ///< the body would have grown past max_body_bytes
  char error[CURL_ERROR_SIZE] = {0};

  ~transfer() {
    if (headers != nullptr)
      curl->slist_free_all(headers);
  }

  void send_head() {
    if (head_sent)
      return;
    head_sent = true;
    long status = 0;
    curl->easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    caf::anon_send(requester,
                   http_response_head{id, static_cast<int32_t>(status), response_headers});
  }
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<transfer*>(user);
  t->received_bytes = true; // the reply has begun: a retry could no longer be transparent
  std::string_view line{data, size * count};
  if (line.rfind("HTTP/", 0) == 0) {
    t->response_headers.clear(); // a new response (after a redirect or 100-continue)
  } else if (line == "\r\n" || line == "\n") {
    // The end of a response's head: the requester learns at once that the reply has begun
    // (a final status, not a 1xx that another head follows), even if no body byte follows.
    long status = 0;
    t->curl->easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200)
      t->send_head();
  } else if (auto colon = line.find(':'); colon != std::string_view::npos) {
    std::string name{line.substr(0, colon)};
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    auto value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
      value.remove_suffix(1);
    t->response_headers.emplace_back(std::move(name), std::string{value});
  }
  return size * count;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<transfer*>(user);
  t->received_bytes = true;
  t->send_head();
  auto n = size * count;
  // Checked before the chunk is copied into a message: however fast the server sends and
  // however far the requester lags, no more than the cap is ever queued for it.
  if (t->body_bytes + static_cast<int64_t>(n) > t->max_body_bytes) {
    t->over_limit = true;
    return 0; // less than given: curl fails the transfer
  }
  t->body_bytes += static_cast<int64_t>(n);
  caf::anon_send(t->requester, http_body_chunk{t->id, std::string{data, n}});
  return n;
}

// One epoll set for both transports: the engine's own client (plain http to a local server)
// and libcurl's, loaded on the first request that needs it. libcurl runs through
// curl_multi_socket_action: each wake-up costs in proportion to the sockets that are ready, not
// to the transfers in flight. (curl_multi_poll and curl_multi_perform visit every transfer on
// every wake-up, which at a thousand streams is most of the CPU.)
class engine_loop {
public:
  static long connection_cap() {
    struct rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
      return 8192;
    return std::clamp(static_cast<long>(limit.rlim_cur / 4), 64L, 8192L);
  }

  engine_loop(std::string library, int wake_fd)
    : library_(std::move(library)), epoll_(epoll_create1(EPOLL_CLOEXEC)), wake_fd_(wake_fd),
      plain_(epoll_, connection_cap()) {
    watch(wake_fd_, EPOLLIN);
  }

  ~engine_loop() {
    if (multi_ != nullptr) {
      for (auto& [id, t] : transfers_)
        remove(*t);
      for (CURL* easy : spare_handles_)
        curl_->easy_cleanup(easy);
      curl_->multi_cleanup(multi_);
    }
    close(epoll_);
  }

  engine_loop(const engine_loop&) = delete;
  engine_loop& operator=(const engine_loop&) = delete;

  void add(http_request& request, http_client_actor requester) {
    if (plain_.add(request, requester))
      return;
    if (auto loaded = load_libcurl(); !loaded) {
      http_transfer_done done;
      done.id = request.id;
      done.error = loaded.error();
      done.curl_code = CURLE_FAILED_INIT;
      caf::anon_send(requester, std::move(done));
      return;
    }
    add_to_curl(request, std::move(requester));
  }

  void cancel(uint64_t id) {
    if (plain_.cancel(id))
      return;
    auto i = transfers_.find(id);
    if (i == transfers_.end())
      return;
    remove(*i->second);
    transfers_.erase(i);
  }

  /// Waits for sockets, the timers or a wake-up, and lets the transports work. Returns true
  /// when the wake-up fired, i.e. the mailbox may hold new messages.
  bool run_once() {
    int timeout = 1000;
    auto now = clock_type::now();
    for (auto& at : {deadline_, plain_.next_deadline()})
      if (at) {
        auto left = std::chrono::ceil<std::chrono::milliseconds>(*at - now);
        timeout = std::min(timeout, static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1000)));
      }
    int n = epoll_wait(epoll_, events_.data(), static_cast<int>(events_.size()), timeout);
    bool woken = false;
    int running = 0;
    for (int i = 0; i < n; ++i) {
      int fd = events_[i].data.fd;
      auto ready = events_[i].events;
      if (fd == wake_fd_) {
        woken = true;
      } else if (plain_.owns(fd)) {
        plain_.on_ready(fd, ready);
      } else if (multi_ != nullptr) {
        int flags = ((ready & EPOLLIN) != 0 ? CURL_CSELECT_IN : 0) |
                    ((ready & EPOLLOUT) != 0 ? CURL_CSELECT_OUT : 0) |
                    ((ready & (EPOLLERR | EPOLLHUP)) != 0 ? CURL_CSELECT_ERR : 0);
        curl_->multi_socket_action(multi_, fd, flags, &running);
      }
    }
    plain_.on_time();
    if (multi_ != nullptr) {
      if (deadline_ && clock_type::now() >= *deadline_) {
        deadline_.reset();
        curl_->multi_socket_action(multi_, CURL_SOCKET_TIMEOUT, 0, &running);
      }
      report_finished();
    }
    return woken;
  }

private:
  using clock_type = std::chrono::steady_clock;

  // libcurl and its multi handle, on the first request the engine's own client cannot carry.
  expected<bool> load_libcurl() {
    if (multi_ != nullptr)
      return true;
    auto loaded = load_curl(library_);
    if (!loaded)
      return failure{loaded.error()};
    curl_ = *loaded;
    multi_ = curl_->multi_init();
    curl_->multi_setopt(multi_, CURLMOPT_MAXCONNECTS, 2048L);
    // Ten thousand agents asking at once must not open ten thousand sockets beside their own
    // files: past a quarter of the descriptors the process may open, requests wait in curl's
    // queue for a connection instead of failing with EMFILE.
    curl_->multi_setopt(multi_, CURLMOPT_MAX_TOTAL_CONNECTIONS, connection_cap());
    curl_->multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_->multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
    curl_->multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_->multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
    return true;
  }

  void add_to_curl(http_request& request, http_client_actor requester) {
    auto t = std::make_unique<transfer>();
    t->curl = curl_;
    t->id = request.id;
    t->requester = std::move(requester);
    t->body = std::move(request.body);
    t->max_body_bytes = request.max_body_bytes;
    t->easy = take_handle();
    for (auto& [name, value] : request.headers)
      t->headers = curl_->slist_append(t->headers, (name + ": " + value).c_str());
    t->headers = curl_->slist_append(t->headers, "Expect:");
    auto* e = t->easy;
    curl_->easy_setopt(e, CURLOPT_URL, request.url.c_str());
    curl_->easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_->easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_->easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
    curl_->easy_setopt(e, CURLOPT_POSTFIELDS, t->body.c_str());
    curl_->easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t->body.size()));
    curl_->easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_->easy_setopt(e, CURLOPT_HEADERDATA, t.get());
    curl_->easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_->easy_setopt(e, CURLOPT_WRITEDATA, t.get());
    curl_->easy_setopt(e, CURLOPT_ERRORBUFFER, t->error);
    curl_->easy_setopt(e, CURLOPT_PRIVATE, t.get());
    curl_->easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(request.connect_timeout_ms));
    // The requester watches for silence precisely; this is only a backstop for a requester
    // that went away (curl's low-speed check averages over a window, seconds late).
    curl_->easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_->easy_setopt(e, CURLOPT_LOW_SPEED_TIME,
                     std::max(1L, static_cast<long>(2 * request.idle_timeout_ms / 1000 + 10)));
    if (request.request_timeout_ms > 0) // 0: no overall limit (an MCP call's own timeout ends it)
      curl_->easy_setopt(e, CURLOPT_TIMEOUT_MS,
                         static_cast<long>(request.request_timeout_ms) + 10000L);
    curl_->easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    curl_->multi_add_handle(multi_, e); // sets a zero timer: the next run_once starts it
    transfers_.emplace(t->id, std::move(t));
  }

  static int on_socket(CURL*, curl_socket_t fd, int what, void* self, void*) {
    auto* loop = static_cast<engine_loop*>(self);
    if (what == CURL_POLL_REMOVE) {
      epoll_ctl(loop->epoll_, EPOLL_CTL_DEL, fd, nullptr);
      return 0;
    }
    uint32_t events = ((what & CURL_POLL_IN) != 0 ? EPOLLIN : 0u) |
                      ((what & CURL_POLL_OUT) != 0 ? EPOLLOUT : 0u);
    loop->watch(fd, events);
    return 0;
  }

  static int on_timer(CURLM*, long timeout_ms, void* self) {
    auto* loop = static_cast<engine_loop*>(self);
    if (timeout_ms < 0)
      loop->deadline_.reset();
    else
      loop->deadline_ = clock_type::now() + std::chrono::milliseconds{timeout_ms};
    return 0;
  }

  // curl may announce a socket again after a change of interest, or a reused descriptor
  // number: modify what exists, add what does not.
  void watch(int fd, uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    if (epoll_ctl(epoll_, EPOLL_CTL_MOD, fd, &ev) != 0 && errno == ENOENT)
      epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
  }

  void report_finished() {
    int queued = 0;
    while (CURLMsg* msg = curl_->multi_info_read(multi_, &queued)) {
      if (msg->msg != CURLMSG_DONE)
        continue;
      transfer* t = nullptr;
      curl_->easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
      auto code = msg->data.result;
      http_transfer_done done;
      done.id = t->id;
      done.curl_code = static_cast<int32_t>(code);
      done.received_bytes = t->received_bytes;
      if (t->over_limit) {
        done.curl_code = CURLE_FILESIZE_EXCEEDED;
        done.error = "the reply exceeded " + std::to_string(t->max_body_bytes) + " bytes";
      } else if (code == CURLE_OK) {
        t->send_head();
      } else {
        done.error = t->error[0] != '\0' ? t->error : curl_->easy_strerror(code);
      }
      caf::anon_send(t->requester, std::move(done));
      auto id = t->id;
      remove(*t);
      transfers_.erase(id);
    }
  }

  // Easy handles are reset and kept for the next transfer: allocating one, with its
  // buffers, for every request was a measurable part of the engine's time at a thousand
  // streams.
  CURL* take_handle() {
    if (spare_handles_.empty())
      return curl_->easy_init();
    CURL* easy = spare_handles_.back();
    spare_handles_.pop_back();
    return easy;
  }

  void remove(transfer& t) {
    curl_->multi_remove_handle(multi_, t.easy);
    if (spare_handles_.size() < max_spare_handles) {
      curl_->easy_reset(t.easy);
      spare_handles_.push_back(t.easy);
    } else {
      curl_->easy_cleanup(t.easy);
    }
  }

  std::string library_;
  const curl_functions* curl_ = nullptr;
  CURLM* multi_ = nullptr;
  int epoll_;
  int wake_fd_;
  plain_http_client plain_;
  std::optional<clock_type::time_point> deadline_;
  std::array<epoll_event, 256> events_{};
  std::unordered_map<uint64_t, std::unique_ptr<transfer>> transfers_;
  static constexpr size_t max_spare_handles = 4096;
  std::vector<CURL*> spare_handles_;
};

} // namespace

struct http_engine::handle {
  std::shared_ptr<wake_signal> signal;
  caf::actor engine;
  provider_gate_actor gate;

  void wake() const { signal->notify(); }
};

void http_engine::warm_up(const std::string& library, const std::string& url) {
  if (needs_libcurl(url))
    preload_curl(library);
}

bool http_engine::needs_libcurl(const std::string& url) { return !plain_http_reaches(url); }

expected<bool> http_engine::check_libcurl_for(const std::string& url, const std::string& library) {
  if (!needs_libcurl(url))
    return true;
  auto loaded = load_curl(library);
  if (!loaded)
    return failure{loaded.error()};
  return true;
}

expected<http_engine> http_engine::start(caf::actor_system& sys, const std::string& library) {
  http_engine result;
  result.handle_ = std::make_shared<handle>();
  auto wake = std::make_shared<wake_signal>();
  result.handle_->signal = wake;
  result.handle_->gate = spawn_provider_gate(sys);
  result.handle_->engine = sys.spawn<caf::detached>([wake, library](caf::blocking_actor* self) {
    engine_loop loop{library, wake->fd};
    bool running = true;
    bool woken = true;
    while (running) {
      if (woken) {
        // The eventfd is cleared before the mailbox is drained, so a message queued after
        // the drain leaves it set and the next epoll_wait returns at once.
        wake->clear();
        bool more = true;
        while (more && running)
          self->receive(
            [&](engine_atom, http_request& request, http_client_actor& requester) {
              loop.add(request, std::move(requester));
            },
            [&](cancel_atom, uint64_t id) { loop.cancel(id); },
            [&](caf::exit_msg&) { running = false; },
            caf::after(std::chrono::seconds(0)) >> [&] { more = false; });
      }
      if (running)
        woken = loop.run_once();
    }
  });
  return result;
}

void http_engine::submit(http_request request, http_client_actor requester) const {
  caf::anon_send(handle_->engine, engine_atom::value, std::move(request), std::move(requester));
  handle_->wake();
}

void http_engine::cancel(uint64_t id) const {
  caf::anon_send(handle_->engine, cancel_atom::value, id);
  handle_->wake();
}

void http_engine::stop() const {
  caf::anon_send_exit(handle_->engine, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(handle_->gate, caf::exit_reason::user_shutdown);
  handle_->wake();
}

provider_gate_actor http_engine::gate() const { return handle_->gate; }

} // namespace troupe
