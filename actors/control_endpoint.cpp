#include "actors/control_endpoint.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/blocking_actor.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include "store/control_channel.hpp"
#include "store/ids.hpp"

namespace troupe {

namespace {

using clock_type = std::chrono::steady_clock;

// Between the endpoint's loop and its forwarder, which asks the session.
using ctl_ask_atom = caf::atom_constant<caf::atom("ctlask")>;
using ctl_answer_atom = caf::atom_constant<caf::atom("ctlanswer")>;
using ctl_stop_atom = caf::atom_constant<caf::atom("ctlstop")>;

constexpr const char* socket_name = session_paths::control_socket_name;
constexpr const char* control_name = session_paths::control_file_name;
// What an unauthenticated peer can hold: this many connections, each with at most one request
// line of max_control_request bytes, for at most request_time.
constexpr size_t max_connections = 32;
constexpr auto request_time = std::chrono::seconds{5};
// How long the session has to answer, and the connection to take the answer.
constexpr auto session_time = std::chrono::seconds{5};
constexpr auto answer_time = std::chrono::seconds{5};
// New connections taken per round, so that the connections already open are served meanwhile.
constexpr int accepts_per_round = 64;

// The loop sleeps in poll(); the forwarder wakes it through this eventfd after sending it an
// answer. Shared by both, closed by whoever lets go last.
struct wake_signal {
  int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  wake_signal() = default;
  wake_signal(const wake_signal&) = delete;
  wake_signal& operator=(const wake_signal&) = delete;
  ~wake_signal() { ::close(fd); }
  void notify() const {
    uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(fd, &one, sizeof one);
  }
  void clear() const {
    uint64_t count = 0;
    [[maybe_unused]] auto n = ::read(fd, &count, sizeof count);
  }
};

// The endpoint's descriptors and files: closed when it goes, removed by remove().
struct endpoint_files {
  int dir_fd = -1;
  int listen_fd = -1;
  ino_t socket_inode = 0;
  ino_t control_inode = 0;
  std::string token;

  endpoint_files() = default;
  endpoint_files(const endpoint_files&) = delete;
  endpoint_files& operator=(const endpoint_files&) = delete;
  ~endpoint_files() {
    if (listen_fd >= 0)
      ::close(listen_fd);
    if (dir_fd >= 0)
      ::close(dir_fd);
  }

  // Removes the socket and control.json if they are still the ones this endpoint made.
  void remove() const {
    remove_own(socket_name, socket_inode);
    remove_own(control_name, control_inode);
  }

private:
  void remove_own(const char* name, ino_t inode) const {
    struct stat st{};
    if (inode != 0 && ::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        st.st_ino == inode)
      ::unlinkat(dir_fd, name, 0);
  }
};

// Constant time: a wrong token takes as long whatever its prefix.
bool same_token(const std::string& a, const std::string& b) {
  if (a.size() != b.size())
    return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// Says why and closes, without waiting for the peer to read it.
void refuse(int fd, const std::string& why) {
  auto line = why + "\n";
  [[maybe_unused]] auto n = ::send(fd, line.data(), line.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  ::close(fd);
}

// Asks the session for the loop, which must not block on it; each answer goes back to the
// loop with its connection's number. Ends (and stops the loop) when the session ends.
caf::behavior forwarder(caf::event_based_actor* self, session_actor session, caf::actor loop,
                        std::shared_ptr<wake_signal> wake) {
  self->monitor(session);
  self->set_down_handler([=](caf::down_msg&) {
    self->send(loop, ctl_stop_atom::value);
    wake->notify();
    self->quit();
  });
  return {
    [=](ctl_ask_atom, uint64_t id, control_command command, const std::string& arg) {
      self->request(session, session_time, control_atom::value, command, arg)
        .then(
          [=](const control_reply& answer) {
            self->send(loop, ctl_answer_atom::value, id, to_line(answer));
            wake->notify();
          },
          [=](caf::error& err) {
            self->send(loop, ctl_answer_atom::value, id,
                       to_line(control_error("the session did not answer: " +
                                             self->system().render(err))));
            wake->notify();
          });
    },
  };
}

enum class phase { reading, waiting, writing };

struct connection {
  int fd = -1;
  uint64_t id = 0;
  phase at = phase::reading;
  std::string in;
  std::string out;
  size_t written = 0;
  clock_type::time_point deadline;
};

// The poll loop: the listening socket, the connections (at most max_connections) and the
// wake-up from the forwarder. Runs on the detached actor's own thread.
class endpoint_loop {
public:
  endpoint_loop(caf::blocking_actor* self, caf::actor forwarder,
                std::shared_ptr<endpoint_files> files, std::shared_ptr<wake_signal> wake)
      : self_(self), forwarder_(std::move(forwarder)), files_(std::move(files)),
        wake_(std::move(wake)) {}

  void run() {
    std::vector<pollfd> fds;
    while (running_) {
      auto now = clock_type::now();
      bool accepting = now >= accept_pause_until_;
      fds.clear();
      fds.push_back({wake_->fd, POLLIN, 0});
      fds.push_back({accepting ? files_->listen_fd : -1, POLLIN, 0});
      for (auto& c : conns_)
        fds.push_back({c.fd,
                       static_cast<short>(c.at == phase::reading   ? POLLIN
                                          : c.at == phase::writing ? POLLOUT
                                                                   : 0),
                       0});
      if (::poll(fds.data(), fds.size(), timeout_ms(now, accepting)) < 0 && errno != EINTR) {
        spdlog::error("control endpoint: poll failed: {}", std::strerror(errno));
        break;
      }
      if (fds[0].revents != 0) {
        wake_->clear(); // before draining: an answer sent after the drain wakes the next poll
        drain_mailbox();
      }
      for (size_t i = 0; i < conns_.size(); ++i) {
        auto& c = conns_[i];
        auto events = fds[i + 2].revents;
        if (c.fd < 0 || events == 0)
          continue;
        if (c.at == phase::reading)
          read_from(c);
        else if (c.at == phase::writing)
          write_to(c);
        else if ((events & (POLLHUP | POLLERR)) != 0)
          close(c); // gone while the session is asked: its answer is dropped
      }
      expire(clock_type::now());
      conns_.erase(std::remove_if(conns_.begin(), conns_.end(),
                                  [](const connection& c) { return c.fd < 0; }),
                   conns_.end());
      if (accepting && (fds[1].revents & POLLIN) != 0)
        accept_some();
    }
    for (auto& c : conns_)
      close(c);
  }

private:
  int timeout_ms(clock_type::time_point now, bool accepting) const {
    auto until = clock_type::time_point::max();
    for (auto& c : conns_)
      until = std::min(until, c.deadline);
    if (!accepting)
      until = std::min(until, accept_pause_until_);
    if (until == clock_type::time_point::max())
      return -1;
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count() + 1;
    return static_cast<int>(std::clamp<int64_t>(ms, 0, 60000));
  }

  void drain_mailbox() {
    bool more = true;
    while (more && running_)
      self_->receive(
        [&](ctl_answer_atom, uint64_t id, std::string& answer) {
          for (auto& c : conns_)
            if (c.id == id && c.fd >= 0 && c.at == phase::waiting)
              respond(c, std::move(answer));
        },
        [&](ctl_stop_atom) { running_ = false; },
        [&](caf::exit_msg&) { running_ = false; },
        caf::after(std::chrono::seconds(0)) >> [&] { more = false; });
  }

  void accept_some() {
    for (int i = 0; i < accepts_per_round; ++i) {
      int fd = ::accept4(files_->listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE) // the process is out of descriptors: not now
          accept_pause_until_ = clock_type::now() + std::chrono::milliseconds{100};
        return;
      }
      ucred peer{};
      socklen_t size = sizeof peer;
      if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 ||
          peer.uid != ::geteuid()) {
        spdlog::debug("control endpoint: refused a connection from uid {}", peer.uid);
        refuse(fd, "refused: only the user who runs the session may connect");
        continue;
      }
      if (conns_.size() >= max_connections && !evict_oldest_reader()) {
        refuse(fd, "error: busy (" + std::to_string(max_connections) +
                     " requests are in progress); try again");
        continue;
      }
      connection c;
      c.fd = fd;
      c.id = ++last_id_;
      c.deadline = clock_type::now() + request_time;
      conns_.push_back(std::move(c));
      // A request already sent is taken now: it cannot be evicted by connections behind it.
      read_from(conns_.back());
      if (conns_.back().fd < 0)
        conns_.pop_back();
    }
  }

  // Makes room: the oldest connection that has not sent a whole request goes.
  bool evict_oldest_reader() {
    connection* oldest = nullptr;
    for (auto& c : conns_)
      if (c.fd >= 0 && c.at == phase::reading && (oldest == nullptr || c.id < oldest->id))
        oldest = &c;
    if (oldest == nullptr)
      return false;
    refuse(oldest->fd, "error: too many connections; this one waited longest for a request");
    oldest->fd = -1;
    conns_.erase(std::remove_if(conns_.begin(), conns_.end(),
                                [](const connection& c) { return c.fd < 0; }),
                 conns_.end());
    return true;
  }

  void read_from(connection& c) {
    char chunk[4096];
    // Bounded work per round: the cap is reached within these reads.
    for (size_t round = 0; round <= max_control_request / sizeof chunk; ++round) {
      auto n = ::recv(c.fd, chunk, sizeof chunk, MSG_DONTWAIT);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return;
      if (n <= 0) {
        close(c); // gone, or broken, before a whole request
        return;
      }
      auto before = c.in.size();
      c.in.append(chunk, static_cast<size_t>(n));
      auto end = c.in.find('\n', before);
      if (end != std::string::npos && end < max_control_request) {
        auto line = c.in.substr(0, end);
        std::string{}.swap(c.in);
        take_request(c, line);
        return;
      }
      if (c.in.size() >= max_control_request) {
        std::string{}.swap(c.in);
        respond(c, "error: the request is longer than " + std::to_string(max_control_request) +
                     " bytes");
        return;
      }
    }
  }

  void take_request(connection& c, const std::string& line) {
    auto request = parse_control_request(line);
    if (!request)
      return respond(c, "error: bad request (" + request.error() +
                          "); one JSON line {token, command, arg} is expected");
    if (!same_token(request->token, files_->token))
      return respond(c, "refused: wrong token");
    c.at = phase::waiting;
    c.deadline = clock_type::now() + session_time + std::chrono::seconds{2};
    self_->send(forwarder_, ctl_ask_atom::value, c.id, request->command, request->arg);
  }

  void respond(connection& c, std::string answer) {
    std::replace(answer.begin(), answer.end(), '\n', ' ');
    c.out = std::move(answer) + "\n";
    c.written = 0;
    c.at = phase::writing;
    c.deadline = clock_type::now() + answer_time;
    write_to(c);
  }

  void write_to(connection& c) {
    while (c.written < c.out.size()) {
      auto n = ::send(c.fd, c.out.data() + c.written, c.out.size() - c.written,
                      MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return;
      if (n < 0)
        break;
      c.written += static_cast<size_t>(n);
    }
    close(c); // answered (or the peer is gone): one request per connection
  }

  void expire(clock_type::time_point now) {
    for (auto& c : conns_) {
      if (c.fd < 0 || now < c.deadline)
        continue;
      if (c.at == phase::reading) {
        refuse(c.fd, "error: no whole request within " +
                       std::to_string(request_time.count()) + " s");
        c.fd = -1;
      } else {
        close(c);
      }
    }
  }

  static void close(connection& c) {
    if (c.fd >= 0)
      ::close(c.fd);
    c.fd = -1;
    std::string{}.swap(c.in);
    std::string{}.swap(c.out);
  }

  caf::blocking_actor* self_;
  caf::actor forwarder_;
  std::shared_ptr<endpoint_files> files_;
  std::shared_ptr<wake_signal> wake_;
  std::vector<connection> conns_;
  uint64_t last_id_ = 0;
  bool running_ = true;
  clock_type::time_point accept_pause_until_;
};

void serve(caf::blocking_actor* self, session_actor session,
           std::shared_ptr<endpoint_files> files, std::shared_ptr<wake_signal> wake) {
  auto forward = self->spawn(forwarder, session, caf::actor_cast<caf::actor>(self), wake);
  endpoint_loop{self, forward, files, wake}.run();
  // The session is gone: so are the endpoint's files.
  files->remove();
}

} // namespace

expected<caf::actor> spawn_control_endpoint(caf::actor_system& sys, session_actor session,
                                            const session_paths& paths) {
  const auto& session_dir = paths.dir();
  std::error_code ec;
  std::filesystem::create_directories(session_dir, ec);
  auto files = std::make_shared<endpoint_files>();
  auto where = (session_dir / socket_name).string();
  auto fail = [&](const std::string& what) -> expected<caf::actor> {
    int error = errno;
    files->remove();
    return failure{"cannot open the control endpoint " + where + ": " + what +
                   (error != 0 ? std::string{": "} + std::strerror(error) : "")};
  };
  files->dir_fd = ::open(session_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (files->dir_fd < 0)
    return fail("cannot open its directory");
  // A socket left by a killed run would make bind fail. The caller holds the session's lock,
  // so no live process serves it.
  if (::unlinkat(files->dir_fd, socket_name, 0) != 0 && errno != ENOENT)
    return fail("cannot remove the stale socket");
  auto address = control_socket_address(session_dir, socket_name, files->dir_fd);
  if (!address) {
    errno = 0;
    return fail(address.error());
  }
  files->listen_fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (files->listen_fd < 0)
    return fail("socket");
  if (::bind(files->listen_fd, reinterpret_cast<const sockaddr*>(&*address), sizeof *address) != 0)
    return fail("bind");
  struct stat st{};
  // Connecting needs write permission on the socket: the owner's only. (The directory is the
  // owner's too, and each peer's uid is checked: this is the third fence.)
  if (::fchmodat(files->dir_fd, socket_name, 0600, 0) != 0 ||
      ::fstatat(files->dir_fd, socket_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
    return fail("chmod");
  files->socket_inode = st.st_ino;
  if (::listen(files->listen_fd, SOMAXCONN) != 0)
    return fail("listen");
  files->token = secret_hex(32);
  auto control = write_control_file(files->dir_fd, paths, socket_name, files->token);
  if (!control) {
    files->remove();
    return failure{control.error()};
  }
  files->control_inode = *control;
  auto wake = std::make_shared<wake_signal>();
  if (wake->fd < 0)
    return fail("eventfd");
  return sys.spawn<caf::detached>(serve, std::move(session), files, wake);
}

} // namespace troupe
