#include "tools/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "protocol/private_files.hpp"
#include "tools/process_reaper.hpp"

extern char** environ;

namespace troupe {

namespace {

// The children whose starters wait for them. Process-wide because waitpid is: a reaper that
// took a status meant for a starter would leave that starter waiting for nothing. The lock is
// held across posix_spawn, so a child that exits at once is registered before anyone looks.
struct child_registry {
  std::mutex mutex;
  /// Each child a starter waits for, with the owner it was started with.
  std::unordered_map<pid_t, std::string> waited_for;
};

child_registry& registry() {
  static child_registry instance;
  return instance;
}

// The environment the child gets: this process's, with `environment` and the owner over it.
std::vector<std::string> environment_of(const child_environment& environment,
                                        const std::string& owner) {
  std::vector<std::string> out;
  for (char* const* e = environ; e != nullptr && *e != nullptr; ++e) {
    const char* equals = std::strchr(*e, '=');
    auto name = equals != nullptr ? std::string(*e, static_cast<size_t>(equals - *e))
                                  : std::string{*e};
    if (environment.count(name) == 0 && !(name == process_owner_variable && !owner.empty()))
      out.emplace_back(*e);
  }
  for (auto& [name, value] : environment)
    out.push_back(name + "=" + value);
  if (!owner.empty())
    out.push_back(std::string{process_owner_variable} + "=" + owner);
  return out;
}

} // namespace

int spawn_child(const std::string& program, const char* const argv[],
                const child_environment& environment, const std::filesystem::path& cwd, int in,
                int out, int err, pid_t& pid, const std::string& owner, int pass_fd) {
  auto env_text = environment_of(environment, owner);
  // The tag the child carries: its own owner, or one it inherits from this process's.
  auto key = std::string{process_owner_variable} + "=";
  std::string tag;
  std::vector<char*> env;
  bool tagged = false;
  for (auto& e : env_text) {
    if (!tagged && e.compare(0, key.size(), key) == 0) {
      tag = e.substr(key.size()); // the first, as getenv reads it
      tagged = true;
    }
    env.push_back(e.data());
  }
  env.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in, 0);
  posix_spawn_file_actions_adddup2(&actions, out, 1);
  posix_spawn_file_actions_adddup2(&actions, err, 2);
  if (pass_fd > 3)
    posix_spawn_file_actions_adddup2(&actions, pass_fd, 3);
  posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());

  // The CLI blocks SIGINT/SIGTERM/SIGHUP in every thread; a child must start with a clean
  // slate.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty_mask, defaults;
  sigemptyset(&empty_mask);
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGPIPE, SIGQUIT, SIGHUP, SIGXFSZ})
    sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &empty_mask);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  // A session of its own: a process group to kill as a whole, and no controlling terminal, so
  // nothing it runs can read from or write to the user's terminal behind troupe's back.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
                                    POSIX_SPAWN_SETSIGDEF);

  int rc = 0;
  {
    auto& reg = registry();
    std::lock_guard<std::mutex> lock{reg.mutex};
    rc = posix_spawn(&pid, program.c_str(), &actions, &attr, const_cast<char**>(argv),
                     env.data());
    if (rc == 0)
      reg.waited_for.emplace(pid, std::move(tag));
  }
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return rc;
}

pid_t wait_child(pid_t pid, int& status, int options) {
  pid_t rc;
  while ((rc = ::waitpid(pid, &status, options)) < 0 && errno == EINTR) {
  }
  if (rc == pid || (rc < 0 && errno == ECHILD)) {
    auto& reg = registry();
    std::lock_guard<std::mutex> lock{reg.mutex};
    reg.waited_for.erase(pid);
  }
  return rc;
}

std::optional<std::string> started_owner(pid_t pid) {
  auto& reg = registry();
  std::lock_guard<std::mutex> lock{reg.mutex};
  auto found = reg.waited_for.find(pid);
  if (found == reg.waited_for.end())
    return std::nullopt;
  return found->second;
}

void reap_unclaimed(const std::vector<pid_t>& pids) {
  auto& reg = registry();
  std::lock_guard<std::mutex> lock{reg.mutex};
  for (auto pid : pids) {
    if (reg.waited_for.count(pid) != 0)
      continue;
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) < 0 && errno == EINTR) {
    }
  }
}

int32_t exit_code_of(int status) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return -1;
}

output_capture::output_capture(size_t cap, bool head_only)
    : half_(head_only ? cap : cap / 2), head_only_(head_only) {}

void output_capture::append(const char* data, size_t n) {
  total_ += n;
  size_t to_head = std::min(n, half_ - std::min(half_, head_.size()));
  head_.append(data, to_head);
  if (to_head == n || head_only_)
    return;
  tail_.append(data + to_head, n - to_head);
  if (tail_.size() > 2 * half_ + 4096)
    tail_.erase(0, tail_.size() - half_);
}

bool output_capture::truncated() const {
  // Decided by what was written, not by the tail's size: a tail trimmed to exactly half the
  // cap has still lost bytes.
  return total_ > head_.size() + std::min(tail_.size(), half_);
}

std::string output_capture::text() const {
  auto tail = tail_.size() > half_ ? tail_.substr(tail_.size() - half_) : tail_;
  if (!truncated() || head_only_)
    return head_ + tail;
  auto cut = total_ - head_.size() - tail.size();
  return head_ + "\n[... " + std::to_string(cut) + " bytes of output cut; " +
         std::to_string(total_) + " bytes in all ...]\n" + tail;
}

namespace {

void close_fd(int& fd) {
  if (fd >= 0)
    ::close(fd);
  fd = -1;
}

void make_non_blocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

} // namespace

expected<started_child> start_child(const child_spec& spec) {
  // Ours: [0] the child's end, [1] ours (a pipe's read end is ours for output).
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  auto fail = [&](std::string why) -> expected<started_child> {
    for (int* fd : {&in[0], &in[1], &out[0], &out[1], &err[0], &err[1]})
      close_fd(*fd);
    return failure{std::move(why)};
  };
  if (spec.input) {
    if (::pipe2(in, O_CLOEXEC) != 0)
      return fail(errno_text("cannot create a pipe"));
  } else if ((in[0] = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
    return fail(errno_text("cannot open /dev/null"));
  }
  if (!spec.output_file.empty()) {
    // A task's log holds its whole output: owner only, whatever the umask.
    if (auto problem = make_private_dirs(spec.output_file.parent_path()); !problem.empty())
      return fail(problem);
    out[1] = open_private(spec.output_file, O_WRONLY | O_TRUNC);
    if (out[1] < 0)
      return fail(errno_text("cannot create " + spec.output_file.string()));
  } else {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0)
      return fail(errno_text("cannot create a pipe"));
    out[0] = p[0];
    out[1] = p[1];
    if (!spec.merge_errors) {
      if (::pipe2(p, O_CLOEXEC) != 0)
        return fail(errno_text("cannot create a pipe"));
      err[0] = p[0];
      err[1] = p[1];
    }
  }
  std::vector<const char*> argv;
  for (auto& a : spec.argv)
    argv.push_back(a.c_str());
  argv.push_back(nullptr);
  started_child child;
  int rc = spawn_child(spec.program, argv.data(), spec.environment, spec.cwd, in[0], out[1],
                       err[1] >= 0 ? err[1] : out[1], child.pid, spec.owner, spec.pass_fd);
  close_fd(in[0]);
  close_fd(out[1]);
  close_fd(err[1]);
  if (rc != 0) {
    errno = rc;
    return fail(errno_text("cannot start " + spec.program + " in " + spec.cwd.string()));
  }
  // The child's input is ours to write when it is a pipe: in[1]; /dev/null left nothing.
  child.input = in[1];
  child.output = out[0];
  child.errors = err[0];
  for (int fd : {child.input, child.output, child.errors})
    if (fd >= 0)
      make_non_blocking(fd);
  return child;
}

child_end supervise_child(started_child child, const supervision& how, int control) {
  using clock = std::chrono::steady_clock;
  auto started = clock::now();
  child_end end;
  output_capture out{how.output_cap, how.head_only};
  output_capture err{how.output_cap, how.head_only};
  // Readable once the child has exited (Linux 5.3); without it the exit is checked every 50 ms.
  int exit_fd = static_cast<int>(::syscall(SYS_pidfd_open, child.pid, 0));
  constexpr std::chrono::milliseconds exit_check{50};
  std::optional<clock::time_point> deadline;
  if (how.timeout.count() > 0)
    deadline = started + how.timeout;
  std::optional<clock::time_point> give_up; // reading stops then
  auto read_until = [&](clock::time_point t) { give_up = give_up ? std::min(*give_up, t) : t; };
  bool killed = false;
  auto kill_group = [&] {
    if (!killed)
      ::kill(-child.pid, SIGKILL); // the whole group: whatever it started goes too
    killed = true;
  };
  size_t written = 0;
  if (child.input >= 0 && how.input.empty())
    close_fd(child.input);
  int status = 0;
  char buffer[65536];
  for (;;) {
    if (!end.exited && wait_child(child.pid, status, WNOHANG) == child.pid) {
      end.exited = true;
      end.exit_code = exit_code_of(status);
      // What it left in the background may hold its output: a moment to finish writing.
      read_until(clock::now() + how.exit_grace);
    }
    bool reading = child.output >= 0 || child.errors >= 0;
    if (!reading && end.exited)
      break;
    auto now = clock::now();
    if (give_up && now >= *give_up) {
      end.output_held = reading;
      break;
    }
    if (!end.exited && !killed && deadline && now >= *deadline) {
      end.timed_out = true;
      kill_group();
      read_until(now + how.kill_grace);
      continue;
    }
    auto wake = give_up;
    if (deadline && !killed && !end.exited)
      wake = wake ? std::min(*wake, *deadline) : *deadline;
    int wait_ms = -1;
    if (wake)
      wait_ms = static_cast<int>(
        std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(*wake - now)
                               .count() + 1));
    if (exit_fd < 0 && !end.exited)
      wait_ms = wait_ms < 0 ? static_cast<int>(exit_check.count())
                            : std::min(wait_ms, static_cast<int>(exit_check.count()));
    pollfd p[5];
    int* which[5];
    nfds_t n = 0;
    auto watch = [&](int& fd, short events) {
      if (fd >= 0) {
        p[n] = {fd, events, 0};
        which[n++] = &fd;
      }
    };
    watch(child.input, POLLOUT);
    watch(child.output, POLLIN);
    watch(child.errors, POLLIN);
    watch(control, POLLIN);
    int exit_watch = end.exited ? -1 : exit_fd;
    watch(exit_watch, POLLIN);
    if (::poll(p, n, wait_ms) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    bool finished = false;
    for (nfds_t k = 0; k < n && !finished; ++k) {
      if (p[k].revents == 0)
        continue;
      int& fd = *which[k];
      if (&fd == &exit_watch)
        continue; // the exit is taken at the top of the loop
      if (&fd == &control) {
        auto r = ::read(control, buffer, sizeof buffer);
        if (r > 0) {
          end.stopped = true;
          kill_group();
          read_until(clock::now() + how.kill_grace);
        } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
          end.abandoned = true; // nobody waits for this child any more
          kill_group();
          finished = true;
        }
        continue;
      }
      if (&fd == &child.input) {
        auto w = ::write(fd, how.input.data() + written, how.input.size() - written);
        if (w > 0)
          written += static_cast<size_t>(w);
        if (w < 0 && errno != EAGAIN && errno != EINTR)
          written = how.input.size(); // the child does not read its input: fine
        if (written == how.input.size())
          close_fd(fd);
        continue;
      }
      auto r = ::read(fd, buffer, sizeof buffer);
      if (r > 0) {
        if (&fd == &child.errors) {
          if (how.on_errors)
            how.on_errors(std::string_view{buffer, static_cast<size_t>(r)});
          else
            err.append(buffer, static_cast<size_t>(r));
        } else if (how.framing) {
          if (auto code = how.framing(std::string_view{buffer, static_cast<size_t>(r)}, out)) {
            end.command_done = true;
            end.exit_code = *code;
            finished = true;
          }
        } else {
          out.append(buffer, static_cast<size_t>(r));
        }
      } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
        if (&fd == &child.output && how.framing)
          how.framing({}, out);
        close_fd(fd);
      }
    }
    if (finished)
      break;
  }
  for (int* fd : {&child.input, &child.output, &child.errors, &control, &exit_fd})
    close_fd(*fd);
  if (!end.command_done) {
    if (!end.exited) {
      kill_group(); // given up on, or abandoned: it must not outlive its supervision
      wait_child(child.pid, status);
      end.exited = true;
      end.exit_code = exit_code_of(status);
    }
    stop_owned_processes(how.owner);
  }
  end.output = out.text();
  end.output_bytes = out.total();
  end.truncated = out.truncated();
  end.errors = err.text();
  end.duration_ms =
    std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - started).count();
  return end;
}

expected<std::pair<child_control, int>> child_control::make() {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0)
    return failure{errno_text("cannot create a pipe")};
  child_control control;
  control.fd_ = p[1];
  return std::make_pair(std::move(control), p[0]);
}

child_control::child_control(child_control&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

child_control& child_control::operator=(child_control&& other) noexcept {
  if (this != &other) {
    close_fd(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

child_control::~child_control() { close_fd(fd_); }

void child_control::stop() const {
  // A supervision that has ended has closed its end: the write fails (SIGPIPE is ignored).
  if (fd_ >= 0) {
    [[maybe_unused]] auto n = ::write(fd_, "x", 1);
  }
}

} // namespace troupe
