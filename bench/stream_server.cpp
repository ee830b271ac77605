// A minimal load server for bench_concurrent_streams: one epoll thread answering every
// `POST …/chat/completions` with the same streamed OpenAI reply after a fixed latency.
//
// The test fixture (tests/support/fake_model_server.py) speaks both wire formats with fault
// injection, but on two cores its own CPU time (~0.9 s per 1,000 streams) would be measured
// instead of troupe's. This server speaks only what the benchmark needs: HTTP/1.1 keep-alive,
// a request body by Content-Length, and a chunked `text/event-stream` reply in OpenAI's
// chat.completion.chunk format, each event its own chunk, ending with `data: [DONE]`.
//
// With tool_steps > 0 (bench/fleet_scale.py) it plays an agent's model statelessly: a request
// whose conversation holds fewer than tool_steps tool results gets a `todo` call (a tool that
// starts no process), the next one the text reply; so every agent takes tool_steps + 1 steps.
//
// Usage: bench_stream_server [latency_ms=200] [tool_steps=0]
//   (prints "PORT n", exits when stdin closes; SIGUSR1 prints "REQUESTS n" on stderr)

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

struct connection {
  std::string in;
  std::string out;
};

struct due_reply {
  clock_type::time_point at;
  int fd;
  /// Tool results in its conversation (with tool_steps > 0).
  size_t tool_results = 0;
};

volatile sig_atomic_t report_requested = 0;

std::string chunk(std::string_view data) {
  char size[16];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return std::string{size} + std::string{data} + "\r\n";
}

// Built once: every request gets the same reply.
std::string make_reply() {
  std::string out = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                    "Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n";
  const char* words[] = {"a ", "streamed ", "reply ", "of ", "a ", "few ", "words"};
  for (const char* w : words)
    out += chunk(std::string{"data: {\"id\":\"bench\",\"object\":\"chat.completion.chunk\","
                             "\"choices\":[{\"index\":0,\"delta\":{\"content\":\""} +
                 w + "\"},\"finish_reason\":null}]}\n\n");
  out += chunk("data: {\"id\":\"bench\",\"object\":\"chat.completion.chunk\",\"choices\":[{"
               "\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{"
               "\"prompt_tokens\":5,\"completion_tokens\":7}}\n\n");
  out += chunk("data: [DONE]\n\n");
  out += "0\r\n\r\n";
  return out;
}

// A streamed reply holding one call of the `todo` tool, numbered so ids stay unique in one
// conversation.
std::string make_tool_reply(size_t number) {
  std::string out = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                    "Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n";
  out += chunk("data: {\"id\":\"bench\",\"object\":\"chat.completion.chunk\",\"choices\":[{"
               "\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{"
               "\"index\":0,\"id\":\"call_" + std::to_string(number) + "\",\"type\":\"function\","
               "\"function\":{\"name\":\"todo\",\"arguments\":\"{\\\"todos\\\":[]}\"}}]},"
               "\"finish_reason\":null}]}\n\n");
  out += chunk("data: {\"id\":\"bench\",\"object\":\"chat.completion.chunk\",\"choices\":[{"
               "\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}],\"usage\":{"
               "\"prompt_tokens\":5,\"completion_tokens\":7}}\n\n");
  out += chunk("data: [DONE]\n\n");
  out += "0\r\n\r\n";
  return out;
}

// How many tool results the request's conversation holds (troupe writes compact JSON).
size_t tool_results_in(std::string_view request) {
  size_t count = 0;
  for (auto at = request.find("\"role\":\"tool\""); at != std::string_view::npos;
       at = request.find("\"role\":\"tool\"", at + 1))
    ++count;
  return count;
}

// Returns the length of one whole request at the front of `in`, or 0 if it is incomplete.
size_t complete_request(const std::string& in) {
  auto end = in.find("\r\n\r\n");
  if (end == std::string::npos)
    return 0;
  size_t length = 0;
  std::string_view head{in.data(), end};
  for (size_t pos = 0; pos < head.size();) {
    auto eol = head.find("\r\n", pos);
    auto line = head.substr(pos, eol == std::string_view::npos ? eol : eol - pos);
    if (line.size() > 15 && strncasecmp(line.data(), "content-length:", 15) == 0)
      length = std::strtoul(std::string{line.substr(15)}.c_str(), nullptr, 10);
    if (eol == std::string_view::npos)
      break;
    pos = eol + 2;
  }
  return in.size() >= end + 4 + length ? end + 4 + length : 0;
}

} // namespace

int main(int argc, char** argv) {
  auto latency = std::chrono::milliseconds{argc > 1 ? std::atoi(argv[1]) : 200};
  size_t tool_steps = argc > 2 ? static_cast<size_t>(std::atoi(argv[2])) : 0;
  const std::string reply = make_reply();
  std::vector<std::string> tool_replies;
  for (size_t i = 0; i < tool_steps; ++i)
    tool_replies.push_back(make_tool_reply(i + 1));
  uint64_t requests = 0;
  std::signal(SIGUSR1, [](int) { report_requested = 1; });

  int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int yes = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listener, 4096) != 0) {
    std::perror("bench_stream_server: bind/listen");
    return 1;
  }
  socklen_t len = sizeof addr;
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  std::printf("PORT %d\n", ntohs(addr.sin_port));
  std::fflush(stdout);

  int ep = epoll_create1(EPOLL_CLOEXEC);
  auto watch = [&](int fd) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  };
  watch(listener);
  watch(STDIN_FILENO);

  std::unordered_map<int, connection> connections;
  std::deque<due_reply> due; // one latency for all, so arrival order is due order
  auto close_connection = [&](int fd) {
    epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
    close(fd);
    connections.erase(fd);
  };
  std::vector<epoll_event> events(1024);
  char buffer[65536];
  for (;;) {
    int timeout = -1;
    if (!due.empty()) {
      auto wait = std::chrono::ceil<std::chrono::milliseconds>(due.front().at - clock_type::now());
      timeout = static_cast<int>(std::max<long>(0, wait.count()));
    }
    int n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), timeout);
    if (report_requested) {
      report_requested = 0;
      std::fprintf(stderr, "REQUESTS %llu\n", static_cast<unsigned long long>(requests));
    }
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == STDIN_FILENO) {
        if (read(STDIN_FILENO, buffer, sizeof buffer) <= 0)
          return 0;
      } else if (fd == listener) {
        int client;
        while ((client = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
          setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
          connections[client];
          watch(client);
        }
      } else {
        auto& c = connections[fd];
        ssize_t got;
        while ((got = read(fd, buffer, sizeof buffer)) > 0)
          c.in.append(buffer, static_cast<size_t>(got));
        if (got == 0) {
          close_connection(fd);
          continue;
        }
        while (size_t whole = complete_request(c.in)) {
          size_t tools = tool_steps > 0 ? tool_results_in({c.in.data(), whole}) : 0;
          c.in.erase(0, whole);
          due.push_back({clock_type::now() + latency, fd, tools});
          ++requests;
        }
      }
    }
    auto now = clock_type::now();
    while (!due.empty() && due.front().at <= now) {
      int fd = due.front().fd;
      auto tools = due.front().tool_results;
      due.pop_front();
      if (connections.count(fd) == 0)
        continue;
      const auto& answer = tools < tool_steps ? tool_replies[tools] : reply;
      // Loopback buffers take a reply of this size whole; a short write means a dead peer.
      if (write(fd, answer.data(), answer.size()) != static_cast<ssize_t>(answer.size()))
        close_connection(fd);
    }
  }
}
