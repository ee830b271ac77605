#pragma once
// Live sessions and raw peers of their control endpoint (control.sock), and what /proc tells of
// a session's process: for the tests of the control endpoint and of who may reach a session.

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <future>
#include <string>
#include <vector>

#include "support/cli_fixture.hpp"

namespace troupe::test {

/// Starts `troupe` with `argv` in the background; returns once `session`/control.json exists
/// and names `control.sock` with a pid other than `stale_pid`.
inline std::future<process_result> start_live(const std::vector<std::string>& argv,
                                              const process_options& opts,
                                              const std::filesystem::path& session,
                                              int64_t stale_pid = 0) {
  auto run = std::async(std::launch::async, [argv, opts] { return run_troupe(argv, opts); });
  bool up = wait_until(
    [&] {
      auto text = read_file(session / "control.json");
      auto json = nlohmann::json::parse(text, nullptr, false);
      return json.is_object() && json.value("pid", int64_t{0}) != stale_pid &&
             std::filesystem::exists(session / "control.sock");
    },
    std::chrono::seconds{20});
  REQUIRE(up);
  return run;
}

/// The pid of a live session (from its control.json).
inline int control_pid(const std::filesystem::path& session) {
  return read_json(session / "control.json")["pid"].get<int>();
}

/// A value of /proc/PID/status in KiB ("VmHWM": peak RSS); -1 when absent.
inline long proc_status_kib(int pid, const std::string& key) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/status"};
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0)
      return std::stol(line.substr(key.size() + 1));
  return -1;
}

/// How many descriptors the process has open.
inline size_t open_fds(int pid) {
  size_t n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

/// A raw connection to a session's control.sock (-1 when it fails); sends give up after 30 s.
inline int connect_control(const std::filesystem::path& session) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  auto path = (session / "control.sock").string();
  REQUIRE(path.size() < sizeof address.sun_path);
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  timeval guard{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &guard, sizeof guard);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// Sends `bytes`; returns how many went out before the peer closed (or the send timed out).
inline size_t send_bytes(int fd, const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    auto n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    sent += static_cast<size_t>(n);
  }
  return sent;
}

/// What a peer got: the bytes, and whether the endpoint closed the connection.
struct peer_read {
  std::string text;
  bool closed = false;
};

/// Reads until the endpoint closes the connection (end of file or reset) or `guard` passes.
inline peer_read read_to_end(int fd, std::chrono::milliseconds guard) {
  peer_read got;
  auto until = std::chrono::steady_clock::now() + guard;
  char chunk[4096];
  while (std::chrono::steady_clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0)
      continue;
    auto n = ::recv(fd, chunk, sizeof chunk, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
      continue;
    if (n <= 0) {
      got.closed = true;
      break;
    }
    got.text.append(chunk, static_cast<size_t>(n));
  }
  return got;
}

} // namespace troupe::test
