// The control endpoint of a live `troupe run` against hostile peers — a huge announced length,
// a huge line, garbage, a thousand idle connections, a wrong token, another user — and the
// places it must work anyway: a session directory deeper than a socket address holds, and a
// socket left behind by a killed run. Asserted by outcome: what each peer gets, the session's
// peak RSS and descriptors, and that a notify still gets through.

#include <doctest/doctest.h>

#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "actors/control_endpoint.hpp"
#include "store/control_channel.hpp"
#include "support/control_peer.hpp"

using namespace troupe;
using namespace troupe::test;
using nlohmann::json;

namespace {

constexpr auto hang_guard = std::chrono::seconds{60};

// The fixture's options, with a hang guard long enough for a session the test ends itself.
process_options live_options(cli_fixture& f) {
  auto opts = f.options();
  opts.timeout = std::chrono::seconds{180};
  return opts;
}

std::vector<std::string> run_argv(cli_fixture& f, const std::vector<std::string>& args) {
  std::vector<std::string> argv{"run", "--cwd", (f.dir / "work").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// A session that waits for notifications (one turn each) until it is interrupted.
std::vector<std::string> waiting_session(cli_fixture& f, const std::string& id) {
  std::vector<json> replies{text_line("ready")};
  for (int i = 0; i < 20; ++i)
    replies.push_back(text_line("noted " + std::to_string(i)));
  return run_argv(f, {"--model", f.script(replies), "--wait-notifications", "--idle-timeout",
                      "600", "--session-id", id, "wait"});
}

// A `troupe notify` reaches the live session: it says so, and the transcript has the message.
void check_delivered(const process_options& opts, const std::filesystem::path& dir,
                     const std::string& id, const std::string& text) {
  auto notify = run_troupe({"notify", id, text}, opts);
  CHECK(notify.exit_code == 0);
  CHECK(notify.out.find("delivered to the running session " + id) != std::string::npos);
  CHECK(wait_until(
    [&] {
      for (auto& line : split_lines(read_file(dir / "transcript.jsonl"))) {
        auto m = json::parse(line, nullptr, false);
        if (m.is_object() && m.value("origin", "") == "task-notification" &&
            m.value("content", "").find(text) != std::string::npos)
          return true;
      }
      return false;
    },
    hang_guard));
}

// Ends a live session with `troupe interrupt`; it must still have been running.
void interrupt(const process_options& opts, const std::string& id,
               std::future<process_result>& run) {
  auto r = run_troupe({"interrupt", id}, opts);
  CHECK(r.exit_code == 0);
  CHECK(run.get().exit_code == 130);
}

// Waits until the endpoint has closed each of `peers` (end of file or reset), at most `guard`;
// closes them all and returns how many the endpoint closed.
size_t wait_closed(std::vector<int>& peers, std::chrono::milliseconds guard) {
  std::vector<pollfd> fds;
  for (int fd : peers)
    fds.push_back({fd, POLLIN, 0});
  size_t closed = 0;
  auto until = std::chrono::steady_clock::now() + guard;
  while (closed < fds.size() && std::chrono::steady_clock::now() < until) {
    if (::poll(fds.data(), fds.size(), 100) <= 0)
      continue;
    for (auto& p : fds) {
      if (p.fd < 0 || p.revents == 0)
        continue;
      char chunk[256];
      auto n = ::recv(p.fd, chunk, sizeof chunk, MSG_DONTWAIT);
      if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR)))
        continue; // an answer before the end
      ::close(p.fd);
      p.fd = -1;
      ++closed;
    }
  }
  for (auto& p : fds)
    if (p.fd >= 0)
      ::close(p.fd);
  peers.clear();
  return closed;
}

// Connects to `socket` as uid/gid 65534 from a forked child, sends `request` and reads to the
// end: 0 when the answer was a refusal and the endpoint closed, 2 when it could not connect,
// 1 for anything else.
int exchange_as_nobody(const std::filesystem::path& socket, const std::string& request) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, socket.c_str(), socket.string().size() + 1);
  pid_t child = ::fork();
  if (child == 0) { // only async-signal-safe calls from here on
    if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0)
      ::_exit(3);
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    timeval guard{30, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &guard, sizeof guard);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &guard, sizeof guard);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
      ::_exit(2);
    [[maybe_unused]] auto sent = ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    char answer[64] = {0};
    char rest[4096];
    auto n = ::recv(fd, answer, sizeof answer - 1, 0);
    while (n > 0)
      n = ::recv(fd, rest, sizeof rest, 0);
    // The end: end of file, or a reset (the endpoint closed with our request unread).
    bool ended = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
    ::_exit(ended && std::strncmp(answer, "refused:", 8) == 0 ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

} // namespace

TEST_CASE("hostile peers cost a live session a bounded amount, and it goes on") {
  cli_fixture f;
  auto dir = session_dir(f, "target");
  auto run = start_live(waiting_session(f, "target"), live_options(f), dir);
  int pid = control_pid(dir);
  auto peak_before = proc_status_kib(pid, "VmHWM");
  REQUIRE(peak_before > 0);

  // CAF's old attack: a 32-byte BASP header announcing a ~4 GiB payload, and nothing more.
  int basp = connect_control(dir);
  REQUIRE(basp >= 0);
  std::string header(32, '\0');
  header[4] = header[5] = header[6] = '\xff';
  header[7] = '\xf0';
  CHECK(send_bytes(basp, header) == header.size());
  auto basp_got = read_to_end(basp, hang_guard);
  CHECK(basp_got.closed);
  CHECK(basp_got.text.rfind("error: no whole request", 0) == 0);
  ::close(basp);

  // A 100 MB line without a newline: the endpoint stops reading at its cap and closes.
  int huge = connect_control(dir);
  REQUIRE(huge >= 0);
  std::string mebibyte(1 << 20, 'x');
  size_t sent = 0;
  for (int i = 0; i < 100; ++i) {
    auto n = send_bytes(huge, mebibyte);
    sent += n;
    if (n < mebibyte.size())
      break;
  }
  CHECK(sent < size_t{100} << 20);
  CHECK(read_to_end(huge, hang_guard).closed);
  ::close(huge);

  // Garbage: one bad line is answered and closed.
  int garbage = connect_control(dir);
  REQUIRE(garbage >= 0);
  send_bytes(garbage, std::string{"\x16\x03\x01\x02\x00 {[\"\xff\xfe\n", 12});
  auto garbage_got = read_to_end(garbage, hang_guard);
  CHECK(garbage_got.closed);
  CHECK(garbage_got.text.rfind("error: bad request", 0) == 0);
  ::close(garbage);

  // A wrong token: refused, and the interrupt it carried never happens.
  int forger = connect_control(dir);
  REQUIRE(forger >= 0);
  send_bytes(forger,
             control_request_line(std::string(32, '0'), control_command::interrupt, ""));
  auto forger_got = read_to_end(forger, hang_guard);
  CHECK(forger_got.closed);
  CHECK(forger_got.text == "refused: wrong token\n");
  ::close(forger);

  CHECK(run.wait_for(std::chrono::seconds{0}) == std::future_status::timeout);
  auto peak_after = proc_status_kib(pid, "VmHWM");
  MESSAGE("session peak RSS (VmHWM): " << peak_before << " KiB before the hostile peers, "
                                        << peak_after << " KiB after");
  REQUIRE(peak_after > 0);
  CHECK(peak_after - peak_before < 16 * 1024);
#if !defined(__SANITIZE_ADDRESS__)
  CHECK(peak_after < 100 * 1024);
#endif

  // Another user, with the right token, past the directory and socket modes (opened here on
  // purpose): the peer's uid is checked all the same.
  if (::geteuid() == 0) {
    for (auto& open : {f.dir.path(), f.dir / "home", f.dir / "home/sessions", dir})
      std::filesystem::permissions(open, std::filesystem::perms(0711));
    std::filesystem::permissions(dir / "control.sock", std::filesystem::perms(0666));
    auto token = read_json(dir / "control.json")["token"].get<std::string>();
    CHECK(exchange_as_nobody(dir / "control.sock",
                             control_request_line(token, control_command::interrupt, "")) == 0);
  } else {
    MESSAGE("not root: the other-user peer is not tried (no uid to switch to)");
  }

  CHECK(run.wait_for(std::chrono::seconds{0}) == std::future_status::timeout);
  check_delivered(f.options(), dir, "target", "still listening");
  interrupt(f.options(), "target", run);
}

TEST_CASE("a thousand idle connections hold at most the cap, all are closed, notify gets through") {
  cli_fixture f;
  auto dir = session_dir(f, "crowded");
  auto run = start_live(waiting_session(f, "crowded"), live_options(f), dir);
  int pid = control_pid(dir);
  auto fds_before = open_fds(pid);
  std::vector<int> peers;
  for (int i = 0; i < 1000; ++i) {
    peers.push_back(connect_control(dir));
    REQUIRE(peers.back() >= 0);
  }
  check_delivered(f.options(), dir, "crowded", "through the crowd");
  auto fds_during = open_fds(pid);
  MESSAGE("session descriptors: " << fds_before << " before, " << fds_during
                                  << " with 1,000 idle peers");
  CHECK(fds_during <= fds_before + 32 + 16); // the cap, plus the notify and the session's own files
  // Every one is closed: the oldest to make room for newer ones, the rest when their time to
  // send a request is up.
  CHECK(wait_closed(peers, hang_guard) == 1000);
  interrupt(f.options(), "crowded", run);
}

TEST_CASE("a session deeper than a socket address holds is reached all the same") {
  cli_fixture f;
  auto home = f.dir / (std::string(60, 'h') + "/" + std::string(60, 'o') + "/home");
  auto opts = live_options(f);
  opts.env["TROUPE_HOME"] = home.string();
  auto dir = home / "sessions/deep";
  REQUIRE((dir / "control.sock").string().size() >= sizeof(sockaddr_un{}.sun_path));
  auto run = start_live(waiting_session(f, "deep"), opts, dir);
  check_delivered(opts, dir, "deep", "from far below");
  interrupt(opts, "deep", run);
  CHECK(!std::filesystem::exists(dir / "control.sock"));
  CHECK(!std::filesystem::exists(dir / "control.json"));
}

TEST_CASE("a socket and control file left by a killed run do not stop the next one") {
  cli_fixture f;
  auto dir = session_dir(f, "again");
  std::filesystem::create_directories(dir);
  // What a kill -9 leaves: a socket nobody listens on, and a control file naming it.
  int stale = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  auto path = (dir / "control.sock").string();
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  REQUIRE(::bind(stale, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
  ::close(stale);
  write_file(dir / "control.json",
             R"({"version": 2, "socket": "control.sock", "token": "stale", "pid": 999999999})");
  auto before = run_troupe({"interrupt", "again"}, f.options());
  CHECK(before.exit_code == 1);
  CHECK(before.err.find("session again is not running") != std::string::npos);

  auto run = start_live(waiting_session(f, "again"), live_options(f), dir, 999999999);
  check_delivered(f.options(), dir, "again", "after the crash");
  interrupt(f.options(), "again", run);
  CHECK(!std::filesystem::exists(dir / "control.sock"));
  CHECK(!std::filesystem::exists(dir / "control.json"));
}
