#include "actors/plain_http.hpp"
#include "actors/http_reply_reader.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <caf/send.hpp>
// Only for its result codes: the requester reads every transport's end as libcurl's.
#include <curl/curl.h>

namespace troupe {

namespace {

using clock_type = plain_http_client::clock_type;
using http_text::lowercase;

struct address {
  sockaddr_storage storage{};
  socklen_t length = 0;
};

/// Where an http:// URL points, when the engine's own client can go there.
struct target {
  std::string authority; ///< as the URL writes it: the Host header
  std::string path;      ///< origin form, at least "/"
  std::string shown;     ///< "HOST port PORT", for messages
  std::vector<address> addresses;
};

bool add_address(target& t, int family, const std::string& text, uint16_t port) {
  address a;
  if (family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&a.storage);
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    if (inet_pton(AF_INET, text.c_str(), &in->sin_addr) != 1)
      return false;
    a.length = sizeof(sockaddr_in);
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&a.storage);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    if (inet_pton(AF_INET6, text.c_str(), &in6->sin6_addr) != 1)
      return false;
    a.length = sizeof(sockaddr_in6);
  }
  t.addresses.push_back(a);
  return true;
}

bool libcurl_chosen() {
  const char* choice = std::getenv("TROUPE_HTTP_CLIENT");
  return choice != nullptr && std::string_view{choice} == "libcurl";
}

// A proxy applies to http:// under these names (libcurl reads them, and NO_PROXY's
// exceptions; it ignores an upper-case HTTP_PROXY, which a CGI server may set from a request's
// header); with any set, libcurl carries the request and keeps its rules.
bool proxy_configured() {
  for (const char* name : {"http_proxy", "all_proxy", "ALL_PROXY"})
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0')
      return true;
  return false;
}

std::optional<target> plain_target(const std::string& url) {
  constexpr std::string_view scheme = "http://";
  if (url.compare(0, scheme.size(), scheme) != 0 || libcurl_chosen() || proxy_configured())
    return std::nullopt;
  if (std::any_of(url.begin(), url.end(), [](unsigned char c) { return c <= 0x20 || c >= 0x7f; }))
    return std::nullopt;
  std::string_view rest{url};
  rest.remove_prefix(scheme.size());
  auto end = rest.find_first_of("/?#");
  auto authority = rest.substr(0, end);
  auto path = end == std::string_view::npos ? std::string_view{} : rest.substr(end);
  path = path.substr(0, path.find('#'));
  if (authority.empty() || authority.find('@') != std::string_view::npos)
    return std::nullopt;
  std::string_view host = authority;
  std::string_view port_text;
  bool bracketed = host.front() == '[';
  if (bracketed) {
    auto close = host.find(']');
    if (close == std::string_view::npos)
      return std::nullopt;
    port_text = host.substr(close + 1);
    host = host.substr(1, close - 1);
    if (!port_text.empty() && port_text.front() != ':')
      return std::nullopt;
    if (!port_text.empty())
      port_text.remove_prefix(1);
  } else if (auto colon = host.find(':'); colon != std::string_view::npos) {
    port_text = host.substr(colon + 1);
    host = host.substr(0, colon);
  }
  unsigned long port = 80;
  if (!port_text.empty()) {
    if (port_text.size() > 5 ||
        !std::all_of(port_text.begin(), port_text.end(), [](unsigned char c) { return std::isdigit(c); }))
      return std::nullopt;
    port = std::stoul(std::string{port_text});
    if (port == 0 || port > 65535)
      return std::nullopt;
  }
  target t;
  std::string name{host};
  auto p = static_cast<uint16_t>(port);
  if (!bracketed && lowercase(name) == "localhost") {
    // As libcurl does: localhost is the loopback, IPv4 first, never a lookup.
    add_address(t, AF_INET, "127.0.0.1", p);
    add_address(t, AF_INET6, "::1", p);
  } else if (!add_address(t, bracketed ? AF_INET6 : AF_INET, name, p)) {
    return std::nullopt; // a host name (or a zone id): libcurl resolves it off this thread
  }
  t.authority = std::string{authority};
  t.path = path.empty() || path.front() == '?' ? "/" + std::string{path} : std::string{path};
  t.shown = name + " port " + std::to_string(port);
  return t;
}

constexpr size_t max_idle_connections = 2048;
/// A kept connection idle longer is not used again (libcurl's default too): a NAT or firewall
/// between here and a LAN server may have dropped it without a word.
constexpr std::chrono::seconds max_idle_age{118};

struct transfer {
  uint64_t id = 0;
  http_client_actor requester;
  target where;
  std::string head; ///< the request line and headers
  std::string body;
  size_t sent = 0;
  int fd = -1;
  bool connecting = false;
  bool reused = false;  ///< the connection carried an earlier request
  bool retried = false; ///< already sent again after a kept connection failed
  size_t next_address = 0;
  http_reply_reader reader;
  bool received = false;
  bool head_sent = false;
  int64_t body_bytes = 0;
  int64_t max_body_bytes = 0;
  clock_type::duration idle_limit{};
  clock_type::duration connect_limit{};
  clock_type::time_point last_byte;
  clock_type::time_point connect_by;
  clock_type::time_point finish_by;

  size_t total() const { return head.size() + body.size(); }
  bool sending() const { return !connecting && fd >= 0 && sent < total(); }

  clock_type::time_point earliest_deadline() const {
    auto at = finish_by;
    if (connecting)
      at = std::min(at, connect_by);
    else if (fd >= 0)
      at = std::min(at, last_byte + idle_limit);
    return at;
  }
};

} // namespace

bool plain_http_reaches(const std::string& url) { return plain_target(url).has_value(); }

struct plain_http_client::state {
  int epoll_fd;
  long connection_cap;
  std::unordered_map<uint64_t, std::unique_ptr<transfer>> transfers;
  std::unordered_map<int, transfer*> active;               ///< socket → its transfer
  struct kept {
    std::string authority;
    clock_type::time_point since;
  };
  std::unordered_map<int, kept> idle;                       ///< kept socket → where, since when
  std::unordered_map<std::string, std::vector<int>> idle_by_authority;
  std::deque<uint64_t> waiting; ///< transfers past the connection cap, oldest first
  std::optional<clock_type::time_point> next_sweep;

  state(int epoll, long cap) : epoll_fd(epoll), connection_cap(cap) {}

  ~state() {
    for (auto& [fd, t] : active)
      ::close(fd);
    for (auto& [fd, authority] : idle)
      ::close(fd);
  }

  long open_sockets() const { return static_cast<long>(active.size() + idle.size()); }

  void watch(int fd, uint32_t events, int op) const {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    epoll_ctl(epoll_fd, op, fd, &ev);
  }

  void expect_deadline(const transfer& t) {
    auto at = t.earliest_deadline();
    if (!next_sweep || at < *next_sweep)
      next_sweep = at;
  }

  // --- Sockets -------------------------------------------------------------------------------

  void close_socket(transfer& t) {
    if (t.fd < 0)
      return;
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, t.fd, nullptr);
    ::close(t.fd);
    active.erase(t.fd);
    t.fd = -1;
    t.connecting = false;
  }

  void close_idle(int fd) {
    auto i = idle.find(fd);
    if (i == idle.end())
      return;
    auto& sockets = idle_by_authority[i->second.authority];
    sockets.erase(std::remove(sockets.begin(), sockets.end(), fd), sockets.end());
    if (sockets.empty())
      idle_by_authority.erase(i->second.authority);
    idle.erase(i);
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
  }

  // A kept socket to this server that is fit for a request: the most recently used (the least
  // likely to have timed out), not idle too long, and with nothing unread in it. Bytes that
  // came after the last reply (a short Content-Length, a stray line) or its close would be
  // taken for the next reply; epoll may not have said so yet when a request is queued in the
  // same wake-up.
  int take_idle(const std::string& authority) {
    auto now = clock_type::now();
    for (;;) {
      auto i = idle_by_authority.find(authority);
      if (i == idle_by_authority.end())
        return -1;
      int fd = i->second.back();
      bool fresh = now - idle.at(fd).since < max_idle_age;
      char byte;
      auto n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      bool clean = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
      if (fresh && clean) {
        i->second.pop_back();
        if (i->second.empty())
          idle_by_authority.erase(i);
        idle.erase(fd);
        return fd;
      }
      close_idle(fd);
    }
  }

  void keep_idle(transfer& t) {
    int fd = t.fd;
    active.erase(fd);
    t.fd = -1;
    if (idle.size() >= max_idle_connections) {
      epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
      ::close(fd);
      return;
    }
    idle.emplace(fd, kept{t.where.authority, clock_type::now()});
    idle_by_authority[t.where.authority].push_back(fd);
    // A kept socket that becomes readable was closed by the server (or spoke unasked).
    watch(fd, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_MOD);
  }

  // --- Transfers -----------------------------------------------------------------------------

  void start(transfer& t) {
    if (int fd = take_idle(t.where.authority); fd >= 0) {
      t.fd = fd;
      t.reused = true;
      t.last_byte = clock_type::now();
      active.emplace(fd, &t);
      watch(fd, EPOLLIN, EPOLL_CTL_MOD);
      expect_deadline(t);
      send_more(t.id);
      return;
    }
    if (open_sockets() >= connection_cap) {
      if (idle.empty()) {
        waiting.push_back(t.id);
        return;
      }
      close_idle(idle.begin()->first); // a kept socket of another server makes room
    }
    connect_next(t);
  }

  // Opens a socket to the transfer's next address; fails the transfer when none is left.
  void connect_next(transfer& t, const std::string& why = {}) {
    while (t.next_address < t.where.addresses.size()) {
      auto& a = t.where.addresses[t.next_address++];
      int fd = ::socket(a.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (fd < 0) {
        fail(t, CURLE_COULDNT_CONNECT, "cannot open a socket: " + std::string{std::strerror(errno)});
        return;
      }
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      t.fd = fd;
      t.reused = false;
      active.emplace(fd, &t);
      int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&a.storage), a.length);
      if (rc == 0) {
        t.last_byte = clock_type::now();
        watch(fd, EPOLLIN, EPOLL_CTL_ADD);
        expect_deadline(t);
        send_more(t.id);
        return;
      }
      if (errno == EINPROGRESS) {
        t.connecting = true;
        t.connect_by = clock_type::now() + t.connect_limit;
        watch(fd, EPOLLOUT, EPOLL_CTL_ADD);
        expect_deadline(t);
        // A loopback connection is made before connect() returns: the request goes now, not
        // after another turn of the loop (which, with the CPUs busy, can wait a time slice).
        pollfd made{fd, POLLOUT, 0};
        if (::poll(&made, 1, 0) == 1)
          on_connected(t);
        return;
      }
      auto error = errno;
      close_socket(t);
      if (t.next_address >= t.where.addresses.size()) {
        fail(t, CURLE_COULDNT_CONNECT,
             "cannot connect to " + t.where.shown + ": " + std::strerror(error));
        return;
      }
    }
    fail(t, CURLE_COULDNT_CONNECT, "cannot connect to " + t.where.shown + ": " + why);
  }

  void on_connected(transfer& t) {
    int error = 0;
    socklen_t length = sizeof error;
    getsockopt(t.fd, SOL_SOCKET, SO_ERROR, &error, &length);
    if (error != 0) {
      close_socket(t);
      connect_next(t, std::strerror(error));
      return;
    }
    t.connecting = false;
    t.last_byte = clock_type::now();
    expect_deadline(t);
    watch(t.fd, EPOLLIN, EPOLL_CTL_MOD);
    send_more(t.id);
  }

  // A kept connection the server closed before it read this request: the request goes again on
  // a new one, once, as libcurl does; nothing of a reply had arrived.
  bool send_again(transfer& t) {
    if (!t.reused || t.retried || t.received)
      return false;
    t.retried = true;
    close_socket(t);
    t.sent = 0;
    t.next_address = 0;
    connect_next(t);
    return true;
  }

  // A connection lost mid-exchange: sent again on a new one when send_again allows, else failed.
  void resend_or_fail(transfer& t, int code, std::string error) {
    if (!send_again(t))
      fail(t, code, std::move(error));
  }

  void send_more(uint64_t id) {
    auto i = transfers.find(id);
    if (i == transfers.end())
      return;
    auto& t = *i->second;
    while (t.sent < t.total()) {
      std::array<iovec, 2> parts{};
      size_t count = 0;
      if (t.sent < t.head.size())
        parts[count++] = {const_cast<char*>(t.head.data()) + t.sent, t.head.size() - t.sent};
      size_t body_from = t.sent > t.head.size() ? t.sent - t.head.size() : 0;
      if (body_from < t.body.size())
        parts[count++] = {const_cast<char*>(t.body.data()) + body_from, t.body.size() - body_from};
      msghdr message{};
      message.msg_iov = parts.data();
      message.msg_iovlen = count;
      auto n = ::sendmsg(t.fd, &message, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR)
          continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          watch(t.fd, EPOLLIN | EPOLLOUT, EPOLL_CTL_MOD);
          return;
        }
        auto error = errno;
        resend_or_fail(t, CURLE_SEND_ERROR,
                       "sending the request to " + t.where.shown + " failed: " + std::strerror(error));
        return;
      }
      t.sent += static_cast<size_t>(n);
    }
    watch(t.fd, EPOLLIN, EPOLL_CTL_MOD);
  }

  void receive(uint64_t id) {
    std::array<char, 64 * 1024> buffer; // NOLINT: filled by read before use
    for (;;) {
      auto i = transfers.find(id);
      if (i == transfers.end() || i->second->fd < 0)
        return;
      auto& t = *i->second;
      auto n = ::read(t.fd, buffer.data(), buffer.size());
      if (n < 0) {
        if (errno == EINTR)
          continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
          return;
        auto error = errno;
        resend_or_fail(t, CURLE_RECV_ERROR,
                       "receiving the reply from " + t.where.shown + " failed: " + std::strerror(error));
        return;
      }
      if (n == 0) {
        at_end_of_stream(t);
        return;
      }
      t.received = true;
      t.last_byte = clock_type::now();
      if (!take(t, std::string_view{buffer.data(), static_cast<size_t>(n)}))
        return;
      if (static_cast<size_t>(n) < buffer.size())
        return; // level-triggered: epoll reports what is left
    }
  }

  // Feeds bytes to the reader; false when the transfer ended.
  bool take(transfer& t, std::string_view bytes) {
    bool over = false;
    auto wrong = t.reader.feed(
      bytes, [&] { send_head(t); },
      [&](std::string_view body) {
        if (t.body_bytes + static_cast<int64_t>(body.size()) > t.max_body_bytes) {
          over = true;
          return false;
        }
        t.body_bytes += static_cast<int64_t>(body.size());
        if (!body.empty())
          caf::anon_send(t.requester, http_body_chunk{t.id, std::string{body}});
        return true;
      });
    if (over) {
      fail(t, CURLE_FILESIZE_EXCEEDED,
           "the reply exceeded " + std::to_string(t.max_body_bytes) + " bytes");
      return false;
    }
    if (!wrong.empty()) {
      fail(t, CURLE_WEIRD_SERVER_REPLY, wrong);
      return false;
    }
    if (t.reader.complete()) {
      finish(t);
      return false;
    }
    return true;
  }

  void at_end_of_stream(transfer& t) {
    if (t.reader.reads_until_close()) {
      close_socket(t);
      finish(t);
      return;
    }
    if (!t.received) {
      resend_or_fail(t, CURLE_GOT_NOTHING, t.where.shown + " closed the connection without a reply");
      return;
    }
    fail(t, CURLE_PARTIAL_FILE,
         t.reader.in_head()
           ? "transfer closed by " + t.where.shown + " in the middle of the reply's head"
           : "transfer closed by " + t.where.shown + " before the end of the reply (" +
               std::to_string(t.body_bytes) + " bytes of body received)");
  }

  void send_head(transfer& t) {
    if (t.head_sent)
      return;
    t.head_sent = true;
    caf::anon_send(t.requester, http_response_head{t.id, t.reader.status, t.reader.headers});
  }

  void finish(transfer& t) {
    send_head(t);
    http_transfer_done done;
    done.id = t.id;
    done.received_bytes = t.received;
    caf::anon_send(t.requester, std::move(done));
    if (t.fd >= 0 && t.reader.reusable() && t.sent == t.total())
      keep_idle(t);
    end(t);
  }

  void fail(transfer& t, int code, std::string error) {
    http_transfer_done done;
    done.id = t.id;
    done.error = std::move(error);
    done.curl_code = code;
    done.received_bytes = t.received;
    caf::anon_send(t.requester, std::move(done));
    end(t);
  }

  // Forgets the transfer (closing its socket unless it was kept) and lets a waiting one start.
  void end(transfer& t) {
    close_socket(t);
    auto id = t.id;
    transfers.erase(id);
    start_waiting();
  }

  // Room for a waiting transfer: a free place under the cap, or a kept socket to give up.
  void start_waiting() {
    while (!waiting.empty() && (open_sockets() < connection_cap || !idle.empty())) {
      auto next = transfers.find(waiting.front());
      waiting.pop_front();
      if (next != transfers.end())
        start(*next->second);
    }
  }
};

plain_http_client::plain_http_client(int epoll_fd, long connection_cap)
  : state_(std::make_unique<state>(epoll_fd, connection_cap)) {}

plain_http_client::~plain_http_client() = default;

bool plain_http_client::add(http_request& request, http_client_actor& requester) {
  auto where = plain_target(request.url);
  if (!where)
    return false;
  auto& s = *state_;
  auto t = std::make_unique<transfer>();
  t->id = request.id;
  t->requester = std::move(requester);
  t->where = std::move(*where);
  t->max_body_bytes = request.max_body_bytes;
  // The requester watches for silence and its deadline precisely; these are backstops for a
  // requester that went away, as wide as libcurl's.
  t->idle_limit = std::chrono::seconds{std::max(1, 2 * request.idle_timeout_ms / 1000 + 10)};
  auto now = clock_type::now();
  // 0: no overall limit (an MCP call's own timeout ends it; a stream may last).
  t->finish_by = request.request_timeout_ms > 0
                   ? now + std::chrono::milliseconds{int64_t{request.request_timeout_ms} + 10000}
                   : clock_type::time_point::max();
  t->connect_limit = std::chrono::milliseconds{std::max(1, request.connect_timeout_ms)};
  std::string host = t->where.authority;
  std::string fields;
  bool accept = false;
  bool accept_encoding = false;
  for (auto& [name, value] : request.headers) {
    if ((name + value).find_first_of("\r\n") != std::string::npos) {
      auto id = t->id;
      s.transfers.emplace(id, std::move(t));
      s.fail(*s.transfers[id], CURLE_BAD_FUNCTION_ARGUMENT,
             "the request header '" + name + "' holds a line break");
      return true;
    }
    auto lower = lowercase(name);
    // As libcurl: a header without a value is not sent, and the caller's Host wins.
    if (value.empty() || lower == "content-length" || lower == "transfer-encoding" ||
        lower == "expect")
      continue; // the client frames the request itself
    if (lower == "host") {
      host = value;
      continue;
    }
    accept = accept || lower == "accept";
    accept_encoding = accept_encoding || lower == "accept-encoding";
    fields += name + ": " + value + "\r\n";
  }
  if (!accept)
    fields += "Accept: */*\r\n";
  // Without the header any coding would be acceptable, and this client decodes none.
  if (!accept_encoding)
    fields += "Accept-Encoding: identity\r\n";
  t->head = "POST " + t->where.path + " HTTP/1.1\r\nHost: " + host + "\r\n" + fields +
            "Content-Length: " + std::to_string(request.body.size()) + "\r\n\r\n";
  t->body = std::move(request.body);
  auto& placed = *s.transfers.emplace(t->id, std::move(t)).first->second;
  s.expect_deadline(placed);
  s.start(placed);
  return true;
}

bool plain_http_client::cancel(uint64_t id) {
  auto& s = *state_;
  auto i = s.transfers.find(id);
  if (i == s.transfers.end())
    return false;
  s.end(*i->second); // no message: the requester asked for silence
  return true;
}

bool plain_http_client::owns(int fd) const {
  return state_->active.count(fd) != 0 || state_->idle.count(fd) != 0;
}

void plain_http_client::on_ready(int fd, uint32_t events) {
  auto& s = *state_;
  if (s.idle.count(fd) != 0) {
    s.close_idle(fd);
    s.start_waiting();
    return;
  }
  auto i = s.active.find(fd);
  if (i == s.active.end())
    return;
  auto& t = *i->second;
  auto id = t.id;
  if (t.connecting) {
    s.on_connected(t);
    return;
  }
  if ((events & EPOLLOUT) != 0 && t.sending())
    s.send_more(id);
  if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0)
    s.receive(id);
}

std::optional<plain_http_client::clock_type::time_point> plain_http_client::next_deadline() const {
  return state_->next_sweep;
}

void plain_http_client::on_time() {
  auto& s = *state_;
  auto now = clock_type::now();
  if (!s.next_sweep || now < *s.next_sweep)
    return;
  s.next_sweep.reset();
  std::vector<uint64_t> expired;
  for (auto& [id, t] : s.transfers) {
    if (t->earliest_deadline() <= now)
      expired.push_back(id);
    else
      s.expect_deadline(*t);
  }
  for (auto id : expired) {
    auto i = s.transfers.find(id);
    if (i == s.transfers.end())
      continue;
    auto& t = *i->second;
    // localhost's 127.0.0.1 hanging: its ::1 gets a connect timeout of its own.
    if (t.connecting && t.finish_by > now && t.next_address < t.where.addresses.size()) {
      s.close_socket(t);
      s.connect_next(t, "timed out");
      continue;
    }
    auto what = t.finish_by <= now ? "the request to " + t.where.shown + " took too long"
                : t.connecting     ? "connecting to " + t.where.shown + " timed out"
                                   : t.where.shown + " went silent";
    s.fail(t, CURLE_OPERATION_TIMEDOUT, what);
  }
}

} // namespace troupe
