// The HTTP engine's own client (plain http to a local address), through the engine's messages,
// against a raw socket server whose every byte the test writes: the framings, keep-alive and
// its failures, the errors a requester reads, and what is sent.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/after.hpp>
#include <caf/scoped_actor.hpp>
#include <curl/curl.h>

#include "actors/http_engine.hpp"
#include "actors/plain_http.hpp"
#include "support/test_support.hpp"

using namespace troupe;
using namespace std::chrono_literals;

namespace {

/// What the server does with one request: write these bytes, then close or keep the connection.
/// `hang` reads the request and writes nothing, ever (until the connection closes).
struct reply {
  std::string bytes;
  bool close_after = false;
  bool hang = false;
  std::chrono::milliseconds delay{0};
};

/// A server on 127.0.0.1 (or ::1) that answers each request it reads with the next reply.
class raw_server {
public:
  explicit raw_server(std::deque<reply> replies, int family = AF_INET)
    : replies_(std::move(replies)) {
    fd_ = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_storage addr{};
    socklen_t length = 0;
    if (family == AF_INET) {
      auto* in = reinterpret_cast<sockaddr_in*>(&addr);
      in->sin_family = AF_INET;
      in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      length = sizeof(sockaddr_in);
    } else {
      auto* in6 = reinterpret_cast<sockaddr_in6*>(&addr);
      in6->sin6_family = AF_INET6;
      in6->sin6_addr = in6addr_loopback;
      length = sizeof(sockaddr_in6);
    }
    listening_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), length) == 0 && ::listen(fd_, 16) == 0;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &length);
    port_ = ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in*>(&addr)->sin_port
                                    : reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
    if (listening_)
      acceptor_ = std::thread([this] { accept_loop(); });
  }

  ~raw_server() {
    stopping_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    if (acceptor_.joinable())
      acceptor_.join();
    std::lock_guard<std::mutex> lock{mutex_};
    for (int c : connections_)
      ::shutdown(c, SHUT_RDWR);
    for (auto& t : handlers_)
      t.detach(); // each ends when its connection does
  }

  bool listening() const { return listening_; }
  int port() const { return port_; }
  int accepted() const { return accepted_; }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> lock{mutex_};
    return requests_;
  }

private:
  void accept_loop() {
    while (!stopping_) {
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0)
        return;
      ++accepted_;
      std::lock_guard<std::mutex> lock{mutex_};
      connections_.push_back(c);
      handlers_.emplace_back([this, c] { serve(c); });
    }
  }

  // One request: its head up to the blank line, then Content-Length bytes of body.
  static bool read_request(int c, std::string& pending, std::string& request) {
    char buffer[4096];
    for (;;) {
      auto end = pending.find("\r\n\r\n");
      if (end != std::string::npos) {
        auto head = pending.substr(0, end + 4);
        size_t length = 0;
        auto at = head.find("Content-Length: ");
        if (at != std::string::npos)
          length = std::stoul(head.substr(at + 16));
        if (pending.size() >= head.size() + length) {
          request = pending.substr(0, head.size() + length);
          pending.erase(0, request.size());
          return true;
        }
      }
      auto n = ::read(c, buffer, sizeof buffer);
      if (n <= 0)
        return false;
      pending.append(buffer, static_cast<size_t>(n));
    }
  }

  void serve(int c) {
    std::string pending;
    std::string request;
    while (read_request(c, pending, request)) {
      reply next;
      {
        std::lock_guard<std::mutex> lock{mutex_};
        requests_.push_back(request);
        if (replies_.empty())
          break;
        next = replies_.front();
        replies_.pop_front();
      }
      if (next.hang) {
        char b;
        while (::read(c, &b, 1) > 0) {
        }
        break;
      }
      std::this_thread::sleep_for(next.delay);
      [[maybe_unused]] auto n = ::write(c, next.bytes.data(), next.bytes.size());
      if (next.close_after)
        break;
    }
    ::close(c);
  }

  int fd_ = -1;
  int port_ = 0;
  bool listening_ = false;
  std::atomic<bool> stopping_{false};
  std::atomic<int> accepted_{0};
  std::thread acceptor_;
  std::mutex mutex_;
  std::deque<reply> replies_;
  std::vector<std::string> requests_;
  std::vector<int> connections_;
  std::vector<std::thread> handlers_;
};

/// What the requester received for one transfer.
struct outcome {
  int status = 0;
  http_headers headers;
  std::string body;
  bool done = false;
  http_transfer_done end;
  int heads = 0;
};

// The engine's own client is under test: a proxy set around the tests would hand every
// request to libcurl.
bool unset_proxies() {
  for (const char* name : {"http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "TROUPE_HTTP_CLIENT"})
    ::unsetenv(name);
  return true;
}

struct engine_fixture {
  bool own_client = unset_proxies();
  test::actor_system_fixture actors;
  http_engine engine = *http_engine::start(actors.sys(), "libcurl.so.4");
  uint64_t next_id = 1;

  ~engine_fixture() { engine.stop(); }

  http_request request_to(const std::string& url, std::string body = R"({"q":1})") {
    http_request r;
    r.id = next_id++;
    r.url = url;
    r.headers = {{"Content-Type", "application/json"}, {"Authorization", "Bearer k"}};
    r.body = std::move(body);
    return r;
  }

  outcome exchange(http_request r, std::chrono::milliseconds limit = 5s) {
    caf::scoped_actor self{actors.sys()};
    engine.submit(std::move(r), caf::actor_cast<http_client_actor>(self));
    outcome out;
    bool timed_out = false;
    while (!out.done && !timed_out)
      self->receive(
        [&](http_response_head& h) {
          ++out.heads;
          out.status = h.status;
          out.headers = h.headers;
        },
        [&](http_body_chunk& c) { out.body += c.data; },
        [&](http_transfer_done& d) {
          out.done = true;
          out.end = d;
        },
        caf::after(limit) >> [&] { timed_out = true; });
    return out;
  }
};

std::string url_of(const raw_server& s, const std::string& path = "/v1/chat") {
  return "http://127.0.0.1:" + std::to_string(s.port()) + path;
}

const std::string ok_head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n";

reply with_length(const std::string& body) {
  return {ok_head + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body};
}

} // namespace

TEST_CASE("the engine's own client reads a chunked reply after a 100 Continue, whole") {
  raw_server server{{{"HTTP/1.1 100 Continue\r\n\r\n" + ok_head +
                      "Transfer-Encoding: chunked\r\nX-Folded: one\r\n two\r\n\r\n"
                      "5;ext=1\r\nhello\r\n"
                      "7\r\n, world\r\n"
                      "0\r\nX-Trailer: t\r\n\r\n"}}};
  engine_fixture f;
  auto out = f.exchange(f.request_to(url_of(server, "/v1/chat?x=1#frag")));
  REQUIRE(out.done);
  CHECK(out.end.error == "");
  CHECK(out.end.curl_code == 0);
  CHECK(out.end.received_bytes);
  CHECK(out.heads == 1);
  CHECK(out.status == 200);
  CHECK(out.body == "hello, world");
  CHECK(*find_header(out.headers, "x-folded") == "one two");
  auto requests = server.requests();
  REQUIRE(requests.size() == 1);
  auto& sent = requests[0];
  CHECK(sent.rfind("POST /v1/chat?x=1 HTTP/1.1\r\n", 0) == 0);
  CHECK(sent.find("\r\nHost: 127.0.0.1:" + std::to_string(server.port()) + "\r\n") != std::string::npos);
  CHECK(sent.find("\r\nAuthorization: Bearer k\r\n") != std::string::npos);
  CHECK(sent.find("\r\nAccept: */*\r\n") != std::string::npos);
  CHECK(sent.find("\r\nAccept-Encoding: identity\r\n") != std::string::npos);
  CHECK(sent.find("\r\nContent-Length: 7\r\n\r\n{\"q\":1}") != std::string::npos);
  CHECK(sent.find("frag") == std::string::npos);
}

TEST_CASE("requests one after another share one kept connection") {
  raw_server server{{with_length("one"), with_length("two"), with_length("three")}};
  engine_fixture f;
  for (std::string expected : {"one", "two", "three"}) {
    auto out = f.exchange(f.request_to(url_of(server)));
    REQUIRE(out.done);
    CHECK(out.end.error == "");
    CHECK(out.body == expected);
  }
  CHECK(server.accepted() == 1);
}

TEST_CASE("a kept connection the server dropped is replaced without the requester noticing") {
  SUBCASE("closed while idle") {
    auto first = with_length("one");
    first.close_after = true; // no Connection: close: the client believes it is kept
    raw_server server{{first, with_length("two")}};
    engine_fixture f;
    CHECK(f.exchange(f.request_to(url_of(server))).body == "one");
    std::this_thread::sleep_for(100ms);
    auto out = f.exchange(f.request_to(url_of(server)));
    CHECK(out.end.error == "");
    CHECK(out.body == "two");
    CHECK(server.accepted() == 2);
  }
  SUBCASE("closed after reading the next request, before a byte of its reply") {
    reply dropped;
    dropped.close_after = true; // reads the request, writes nothing, closes
    raw_server server{{with_length("one"), dropped, with_length("two")}};
    engine_fixture f;
    CHECK(f.exchange(f.request_to(url_of(server))).body == "one");
    auto out = f.exchange(f.request_to(url_of(server)));
    CHECK(out.end.error == "");
    CHECK(out.body == "two");
    CHECK(server.accepted() == 2);
    CHECK(server.requests().size() == 3); // the second request went twice, once per connection
  }
  SUBCASE("but a fresh connection closed without a reply is an error, sent once") {
    reply dropped;
    dropped.close_after = true;
    raw_server server{{dropped, with_length("never")}};
    engine_fixture f;
    auto out = f.exchange(f.request_to(url_of(server)));
    CHECK(out.end.curl_code == CURLE_GOT_NOTHING);
    CHECK(out.end.error.find("closed the connection without a reply") != std::string::npos);
    CHECK_FALSE(out.end.received_bytes);
    CHECK(server.requests().size() == 1);
  }
}

TEST_CASE("a reply framed by the connection's close ends with it, and the socket is not kept") {
  reply closing{"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it", true};
  raw_server server{{closing, with_length("next")}};
  engine_fixture f;
  auto out = f.exchange(f.request_to(url_of(server)));
  CHECK(out.end.error == "");
  CHECK(out.body == "all of it");
  CHECK(f.exchange(f.request_to(url_of(server))).body == "next");
  CHECK(server.accepted() == 2);
}

TEST_CASE("malformed replies fail with what is wrong, and are never retried as lost") {
  struct row {
    std::string bytes;
    std::string says;
  };
  std::vector<row> rows = {
    {"SSH-2.0-OpenSSH_9.2\r\n", "not an HTTP/1.x reply"},
    {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", "two different Content-Lengths"},
    {"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n", "malformed Content-Length"},
    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "malformed chunk size"},
    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhello\r\n", "runs past its size"},
    {"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "malformed header line"},
    {"HTTP/1.1 200 OK\r\nX-Long: " + std::string(300 * 1024, 'a') + "\r\n\r\n", "longer than"},
  };
  for (auto& r : rows) {
    CAPTURE(r.says);
    raw_server server{{{r.bytes, true}}};
    engine_fixture f;
    auto out = f.exchange(f.request_to(url_of(server)));
    REQUIRE(out.done);
    CHECK(out.end.curl_code == CURLE_WEIRD_SERVER_REPLY);
    CHECK(out.end.error.find(r.says) != std::string::npos);
    CHECK(server.requests().size() == 1);
  }
}

TEST_CASE("replies libcurl takes are taken: a repeated Content-Length, a lower-case or HTTP/2 "
          "status line") {
  raw_server server{{{"HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\nhello"},
                     {"http/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo"},
                     {"HTTP/2 200\r\nContent-Length: 5\r\n\r\nthree", true}}};
  engine_fixture f;
  for (std::string expected : {"hello", "two", "three"}) {
    auto out = f.exchange(f.request_to(url_of(server)));
    CHECK(out.end.error == "");
    CHECK(out.body == expected);
  }
}

TEST_CASE("a reply cut short says how much of it had arrived") {
  raw_server server{{{ok_head + "Content-Length: 100\r\n\r\n0123456789", true}}};
  engine_fixture f;
  auto out = f.exchange(f.request_to(url_of(server)));
  CHECK(out.status == 200);
  CHECK(out.body == "0123456789");
  CHECK(out.end.curl_code == CURLE_PARTIAL_FILE);
  CHECK(out.end.received_bytes);
  CHECK(out.end.error.find("(10 bytes of body received)") != std::string::npos);
}

TEST_CASE("a reply past max_body_bytes is cut there, nothing past it delivered") {
  raw_server server{{with_length(std::string(1000, 'x'))}};
  engine_fixture f;
  auto r = f.request_to(url_of(server));
  r.max_body_bytes = 100;
  auto out = f.exchange(std::move(r));
  CHECK(out.end.curl_code == CURLE_FILESIZE_EXCEEDED);
  CHECK(out.end.error == "the reply exceeded 100 bytes");
  CHECK(out.body.size() <= 100);
}

TEST_CASE("a refused connection and a connection that never completes fail as connection failures") {
  engine_fixture f;
  int port = 0;
  {
    raw_server gone{{}};
    port = gone.port();
  }
  auto refused = f.exchange(f.request_to("http://127.0.0.1:" + std::to_string(port) + "/v1"));
  CHECK(refused.end.curl_code == CURLE_COULDNT_CONNECT);
  CHECK(refused.end.error.find("cannot connect to 127.0.0.1 port " + std::to_string(port)) !=
        std::string::npos);

  // A listener that never accepts, its backlog full: the next handshake never completes.
  int full = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof addr;
  REQUIRE(::bind(full, reinterpret_cast<sockaddr*>(&addr), length) == 0);
  REQUIRE(::listen(full, 0) == 0);
  getsockname(full, reinterpret_cast<sockaddr*>(&addr), &length);
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) { // a few: the kernel's backlog is a little larger than asked
    int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    ::connect(c, reinterpret_cast<sockaddr*>(&addr), length);
    fillers.push_back(c);
  }
  std::this_thread::sleep_for(50ms);
  auto r = f.request_to("http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/v1");
  r.connect_timeout_ms = 300;
  auto started = std::chrono::steady_clock::now();
  auto stalled = f.exchange(std::move(r));
  auto took = std::chrono::steady_clock::now() - started;
  CHECK(stalled.end.curl_code == CURLE_OPERATION_TIMEDOUT);
  CHECK(stalled.end.error.find("timed out") != std::string::npos);
  CHECK(took < 3s);
  for (int c : fillers)
    ::close(c);
  ::close(full);
}

TEST_CASE("a request header holding a line break is refused before anything is sent") {
  raw_server server{{with_length("never")}};
  engine_fixture f;
  auto r = f.request_to(url_of(server));
  r.headers.emplace_back("X-Injected", "a\r\nX-Evil: 1");
  auto out = f.exchange(std::move(r));
  CHECK(out.end.curl_code == CURLE_BAD_FUNCTION_ARGUMENT);
  CHECK(out.end.error.find("'X-Injected' holds a line break") != std::string::npos);
  std::this_thread::sleep_for(50ms);
  CHECK(server.accepted() == 0);
}

TEST_CASE("a cancelled transfer says nothing more and its connection is closed") {
  reply hang;
  hang.hang = true;
  raw_server server{{hang, with_length("after")}};
  engine_fixture f;
  caf::scoped_actor self{f.actors.sys()};
  auto r = f.request_to(url_of(server));
  auto id = r.id;
  f.engine.submit(std::move(r), caf::actor_cast<http_client_actor>(self));
  for (int i = 0; i < 100 && server.requests().empty(); ++i)
    std::this_thread::sleep_for(10ms);
  REQUIRE(server.requests().size() == 1);
  f.engine.cancel(id);
  bool heard = false;
  self->receive([&](http_transfer_done&) { heard = true; }, [&](http_body_chunk&) { heard = true; },
                [&](http_response_head&) { heard = true; }, caf::after(300ms) >> [] {});
  CHECK_FALSE(heard);
  // The hanging connection was closed, not kept: the next request needs a new one.
  CHECK(f.exchange(f.request_to(url_of(server))).body == "after");
  CHECK(server.accepted() == 2);
}

TEST_CASE("localhost is the loopback, IPv6 too, and a bracketed address names its Host") {
  raw_server v6{{with_length("six"), with_length("six again")}, AF_INET6};
  if (!v6.listening()) {
    MESSAGE("no IPv6 loopback here");
    return;
  }
  engine_fixture f;
  auto port = std::to_string(v6.port());
  auto out = f.exchange(f.request_to("http://LocalHost:" + port + "/v1"));
  CHECK(out.end.error == "");
  CHECK(out.body == "six"); // 127.0.0.1 refused, ::1 answered
  out = f.exchange(f.request_to("http://[::1]:" + port + "/v1"));
  CHECK(out.body == "six again");
  auto requests = v6.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].find("\r\nHost: LocalHost:" + port + "\r\n") != std::string::npos);
  CHECK(requests[1].find("\r\nHost: [::1]:" + port + "\r\n") != std::string::npos);
}

TEST_CASE("only plain http to an address or localhost, without a proxy, skips libcurl") {
  unset_proxies();
  CHECK(plain_http_reaches("http://127.0.0.1:8080/v1"));
  CHECK(plain_http_reaches("http://localhost/v1"));
  CHECK(plain_http_reaches("http://[::1]:11434"));
  CHECK(plain_http_reaches("http://10.0.0.5:8000/v1"));
  CHECK_FALSE(plain_http_reaches("https://127.0.0.1/v1"));
  CHECK_FALSE(plain_http_reaches("https://api.openai.com/v1"));
  CHECK_FALSE(plain_http_reaches("http://gpu-box:8000/v1"));     // a name: libcurl resolves it
  CHECK_FALSE(plain_http_reaches("http://user:pw@127.0.0.1/v1")); // credentials
  CHECK_FALSE(plain_http_reaches("http://[fe80::1%eth0]:80/"));   // a zone
  CHECK_FALSE(plain_http_reaches("http://127.0.0.1:99999/"));
  CHECK_FALSE(plain_http_reaches("http://127.1/"));
  for (const char* proxy : {"http_proxy", "all_proxy", "ALL_PROXY"}) {
    CAPTURE(proxy);
    ::setenv(proxy, "http://127.0.0.1:3128", 1);
    CHECK_FALSE(plain_http_reaches("http://127.0.0.1:8080/v1"));
    ::unsetenv(proxy);
  }
  // libcurl ignores an upper-case HTTP_PROXY for http:// (a CGI server may set it from a
  // request's Proxy header): so does the choice of client.
  ::setenv("HTTP_PROXY", "http://127.0.0.1:3128", 1);
  CHECK(plain_http_reaches("http://127.0.0.1:8080/v1"));
  ::unsetenv("HTTP_PROXY");
  ::setenv("TROUPE_HTTP_CLIENT", "libcurl", 1);
  CHECK_FALSE(plain_http_reaches("http://127.0.0.1:8080/v1"));
  ::unsetenv("TROUPE_HTTP_CLIENT");
  CHECK(plain_http_reaches("http://127.0.0.1:8080/v1"));
}

TEST_CASE("headers as libcurl sends them: the caller's Host, none without a value") {
  raw_server server{{with_length("ok")}};
  engine_fixture f;
  auto r = f.request_to(url_of(server));
  r.headers.emplace_back("Host", "models.internal");
  r.headers.emplace_back("X-Empty", "");
  CHECK(f.exchange(std::move(r)).body == "ok");
  auto sent = server.requests().at(0);
  CHECK(sent.find("\r\nHost: models.internal\r\n") != std::string::npos);
  CHECK(sent.find("Host: 127.0.0.1") == std::string::npos);
  CHECK(sent.find("X-Empty") == std::string::npos);
}

TEST_CASE("a compressed reply the request did not ask for is an error that says so") {
  raw_server server{{{ok_head + "Content-Encoding: gzip\r\nContent-Length: 4\r\n\r\n\x1f\x8b\x08\x00"}}};
  engine_fixture f;
  auto out = f.exchange(f.request_to(url_of(server)));
  CHECK(out.end.curl_code == CURLE_WEIRD_SERVER_REPLY);
  CHECK(out.end.error.find("the reply is compressed (Content-Encoding: gzip)") != std::string::npos);
  CHECK(out.body.empty());
}

namespace {

int listen_on_loopback(int& port) {
  int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof addr;
  ::bind(l, reinterpret_cast<sockaddr*>(&addr), length);
  ::listen(l, 16);
  getsockname(l, reinterpret_cast<sockaddr*>(&addr), &length);
  port = ntohs(addr.sin_port);
  return l;
}

// Reads one request (head and Content-Length body) from `c`.
void read_request_from(int c) {
  std::string got;
  char buffer[4096];
  for (;;) {
    auto end = got.find("\r\n\r\n");
    if (end != std::string::npos) {
      auto at = got.find("Content-Length: ");
      size_t length = at == std::string::npos ? 0 : std::stoul(got.substr(at + 16));
      if (got.size() >= end + 4 + length)
        return;
    }
    auto n = ::read(c, buffer, sizeof buffer);
    if (n <= 0)
      return;
    got.append(buffer, static_cast<size_t>(n));
  }
}

} // namespace

TEST_CASE("a kept connection with bytes left in it is never given the next request") {
  // The reply fills the client's read buffer exactly (64 KiB), so the stray bytes after it are
  // read by nobody; the next request, queued in the same wake-up, must go to a new connection.
  engine_fixture f;
  int port = 0;
  int l = listen_on_loopback(port);
  auto url = "http://127.0.0.1:" + std::to_string(port) + "/v1";
  std::string head;
  std::string body;
  for (size_t n = 60000;; ++n) {
    head = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(n) + "\r\n\r\n";
    if (head.size() + n == 65536) {
      body.assign(n, 'a');
      break;
    }
  }
  const std::string ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  for (int attempt = 0; attempt < 20; ++attempt) {
    CAPTURE(attempt);
    caf::scoped_actor first{f.actors.sys()};
    caf::scoped_actor second{f.actors.sys()};
    f.engine.submit(f.request_to(url), caf::actor_cast<http_client_actor>(first));
    int c = ::accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
    read_request_from(c);
    std::string dirty = head + body + "JUNK\r\n";
    [[maybe_unused]] auto n = ::write(c, dirty.data(), dirty.size());
    f.engine.submit(f.request_to(url), caf::actor_cast<http_client_actor>(second));
    pollfd fresh{l, POLLIN, 0};
    CHECK(::poll(&fresh, 1, 3000) == 1); // a new connection
    int c2 = ::accept4(l, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (c2 >= 0) {
      ::fcntl(c2, F_SETFL, 0);
      read_request_from(c2);
      n = ::write(c2, ok.data(), ok.size());
    }
    std::string error = "(no end)";
    bool done = false;
    while (!done)
      second->receive([&](http_response_head&) {}, [&](http_body_chunk&) {},
                      [&](http_transfer_done& d) {
                        done = true;
                        error = d.error;
                      },
                      caf::after(3s) >> [&] { done = true; });
    CHECK(error == "");
    // The dirty connection was closed, never written to.
    ::fcntl(c, F_SETFL, O_NONBLOCK);
    char byte;
    CHECK(::read(c, &byte, 1) <= 0);
    ::close(c);
    if (c2 >= 0)
      ::close(c2);
  }
  ::close(l);
}

TEST_CASE("a request without an overall limit (an MCP call) is not cut at 10 s, on either transport") {
  // request_timeout_ms 0: only the caller's own timeout ends it. Both transports at once, so
  // that the test waits its 10.5 s only once.
  raw_server through_curl{{{with_length("late").bytes, false, false, 10500ms}}};
  raw_server own{{{with_length("late").bytes, false, false, 10500ms}}};
  engine_fixture f;
  caf::scoped_actor a{f.actors.sys()};
  caf::scoped_actor b{f.actors.sys()};
  auto request = [&](const raw_server& s) {
    auto r = f.request_to(url_of(s));
    r.request_timeout_ms = 0;
    return r;
  };
  ::setenv("TROUPE_HTTP_CLIENT", "libcurl", 1);
  f.engine.submit(request(through_curl), caf::actor_cast<http_client_actor>(a));
  for (int i = 0; i < 500 && through_curl.requests().empty(); ++i)
    std::this_thread::sleep_for(10ms);
  ::unsetenv("TROUPE_HTTP_CLIENT");
  REQUIRE(through_curl.requests().size() == 1);
  f.engine.submit(request(own), caf::actor_cast<http_client_actor>(b));
  for (auto* self : {&a, &b}) {
    std::string body;
    std::string error = "(no end)";
    bool done = false;
    while (!done)
      (*self)->receive([&](http_response_head&) {}, [&](http_body_chunk& c) { body += c.data; },
                       [&](http_transfer_done& d) {
                         done = true;
                         error = d.error;
                       },
                       caf::after(15s) >> [&] { done = true; });
    CHECK(error == "");
    CHECK(body == "late");
  }
}

TEST_CASE("a chunked reply compressed underneath is an error that says so") {
  raw_server server{{{ok_head + "Transfer-Encoding: gzip, chunked\r\n\r\n4\r\n\x1f\x8b\x08\x00\r\n0\r\n\r\n"}}};
  engine_fixture f;
  auto out = f.exchange(f.request_to(url_of(server)));
  CHECK(out.end.error.find("the reply is compressed (Transfer-Encoding: gzip, chunked)") !=
        std::string::npos);
  CHECK(out.body.empty());
}

TEST_CASE("localhost whose 127.0.0.1 never answers the handshake is tried on ::1") {
  raw_server v6{{with_length("six")}, AF_INET6};
  if (!v6.listening()) {
    MESSAGE("no IPv6 loopback here");
    return;
  }
  // 127.0.0.1 on the same port: a listener that never accepts, its backlog full.
  int full = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(v6.port()));
  if (::bind(full, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    MESSAGE("the port is taken on 127.0.0.1");
    ::close(full);
    return;
  }
  REQUIRE(::listen(full, 0) == 0);
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {
    int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    ::connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    fillers.push_back(c);
  }
  std::this_thread::sleep_for(50ms);
  engine_fixture f;
  auto r = f.request_to("http://localhost:" + std::to_string(v6.port()) + "/v1");
  r.connect_timeout_ms = 300;
  auto out = f.exchange(std::move(r));
  CHECK(out.end.error == "");
  CHECK(out.body == "six");
  for (int c : fillers)
    ::close(c);
  ::close(full);
}
