#include "tools/shell.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

extern char** environ;

namespace troupe {

namespace {

// Restores the previous call's cwd and exports, runs the command, then saves both again.
// $1 = command, $2 = default cwd, $3 = state directory.
// Only builtins: every fork here would cost each call a millisecond or more. The state files
// are overwritten in place with `1<>` (no truncation: on ext4 truncating and rewriting a file
// forces its data out, ~0.7 ms a file). Stale bytes past the new end are never read: the cwd
// file is read up to its first newline, and the env file ends with `return 0`, which stops
// `.` there. A command killed mid-save leaves at worst a partial file; then the fallbacks
// below (cd to the workspace, ignore a bad line) apply.
constexpr const char* wrapper_script = R"sh(
__troupe_state="$3"
if [ -f "$__troupe_state/shell_env" ]; then . "$__troupe_state/shell_env" 2>/dev/null; fi
__troupe_cwd="$2"
if [ -f "$__troupe_state/shell_cwd" ]; then read -r __troupe_cwd < "$__troupe_state/shell_cwd"; fi
cd -- "$__troupe_cwd" 2>/dev/null || cd -- "$2" || exit 1
__troupe_save() {
  __troupe_rc=$?
  pwd -P 1<> "$__troupe_state/shell_cwd" 2>/dev/null
  { export -p; echo 'return 0'; } 1<> "$__troupe_state/shell_env" 2>/dev/null
  exit $__troupe_rc
}
trap __troupe_save EXIT
eval "$1"
)sh";

// Keeps the first and last half of the cap; counts everything.
class output_capture {
public:
  explicit output_capture(size_t cap) : half_(cap / 2) {}

  void append(const char* data, size_t n) {
    total_ += n;
    size_t to_head = std::min(n, half_ - std::min(half_, head_.size()));
    head_.append(data, to_head);
    if (to_head == n)
      return;
    tail_.append(data + to_head, n - to_head);
    if (tail_.size() > 2 * half_ + 4096)
      tail_.erase(0, tail_.size() - half_);
  }

  process_exit finish() {
    process_exit result;
    result.total_bytes = static_cast<int64_t>(total_);
    if (tail_.size() > half_) {
      result.truncated = true;
      auto cut = total_ - head_.size() - half_;
      result.output = head_ + "\n[... " + std::to_string(cut) + " bytes of output cut; " +
                      std::to_string(total_) + " bytes in all ...]\n" +
                      tail_.substr(tail_.size() - half_);
    } else {
      result.output = head_ + tail_;
    }
    return result;
  }

private:
  size_t half_;
  size_t total_ = 0;
  std::string head_;
  std::string tail_;
};

int decode_status(int status) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return -1;
}

} // namespace

tool_spec shell_tool() {
  tool_spec spec;
  spec.name = "shell";
  spec.description =
    "Run a bash command in the workspace and return its combined stdout and stderr with "
    "the exit code. The working directory and exported variables persist between calls. "
    "Standard input is empty; do not start interactive programs. Long output keeps its "
    "head and tail. `timeout` (seconds) overrides the default time limit.";
  spec.input_schema = {
    {"type", "object"},
    {"properties",
     {{"command", {{"type", "string"}, {"description", "the bash command to run"}}},
      {"timeout",
       {{"type", "number"}, {"description", "seconds before the command is killed (max 86400)"}}}}},
    {"required", {"command"}}};
  spec.block_names = {"shell", "bash", "sh"};
  spec.kind = tool_kind::process;
  spec.examples = {{"", "ls -la"}};
  spec.input_from_block = [](std::string_view, std::string_view body) {
    return nlohmann::json{{"command", std::string{body}}};
  };
  return spec;
}

std::chrono::milliseconds shell_timeout(const nlohmann::json& input, const tool_context& ctx) {
  constexpr double max_seconds = 24 * 3600;
  if (auto t = input.find("timeout"); t != input.end() && t->is_number() && t->get<double>() > 0)
    return std::chrono::milliseconds{
      static_cast<int64_t>(std::min(t->get<double>(), max_seconds) * 1000)};
  return ctx.shell_timeout;
}

expected<shell_child> start_shell(const nlohmann::json& input, const tool_context& ctx) {
  auto command = input.at("command").get<std::string>();
  std::error_code ec;
  std::filesystem::create_directories(ctx.state_dir, ec);
  if (ec)
    return failure{"cannot create tool state directory " + ctx.state_dir.string() + ": " +
                   ec.message()};
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return failure{std::string{"cannot create a pipe: "} + std::strerror(errno)};

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);

  // The CLI blocks SIGINT/SIGTERM in every thread; a child must start with a clean slate.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty_mask, defaults;
  sigemptyset(&empty_mask);
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGPIPE, SIGQUIT, SIGHUP})
    sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &empty_mask);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                    POSIX_SPAWN_SETSIGDEF);

  std::string cwd = ctx.cwd.string();
  std::string state = ctx.state_dir.string();
  const char* argv[] = {"bash", "--noprofile", "--norc", "-c", wrapper_script, "troupe-shell",
                        command.c_str(), cwd.c_str(), state.c_str(), nullptr};
  pid_t pid = -1;
  int rc = posix_spawn(&pid, ctx.shell_program.c_str(), &actions, &attr,
                       const_cast<char**>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return failure{"cannot start " + ctx.shell_program + ": " + std::strerror(rc)};
  }
  return shell_child{pid, fds[0]};
}

process_exit wait_for_shell(shell_child child, size_t output_cap) {
  output_capture capture{output_cap};
  char buffer[65536];
  int status = 0;
  bool reaped = false;
  pollfd pfd{child.output_fd, POLLIN, 0};
  for (;;) {
    int ready = poll(&pfd, 1, reaped ? 0 : 100);
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready > 0) {
      auto n = read(child.output_fd, buffer, sizeof buffer);
      if (n > 0) {
        capture.append(buffer, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR)
        continue;
      break; // EOF or error: every writer has gone
    }
    if (reaped)
      break; // bash is gone and nothing more is buffered: a background job holds the pipe
    if (waitpid(child.pid, &status, WNOHANG) == child.pid)
      reaped = true;
  }
  close(child.output_fd);
  if (!reaped)
    while (waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
    }
  auto result = capture.finish();
  result.exit_code = decode_status(status);
  return result;
}

tool_result shell_result(const process_exit& exit, bool timed_out,
                         std::chrono::milliseconds timeout, bool interrupted) {
  tool_result result;
  result.output = exit.output;
  result.exit_code = exit.exit_code;
  result.truncated = exit.truncated;
  if (timed_out) {
    result.is_error = true;
    auto tenths = (timeout.count() + 50) / 100;
    result.output += "\n[command timed out after " + std::to_string(tenths / 10) + "." +
                     std::to_string(tenths % 10) + " s and was killed with its process group]";
  } else if (interrupted) {
    result.is_error = true;
    result.output += "\n[interrupted by the user; the command was killed]";
  } else if (exit.exit_code != 0) {
    result.is_error = true;
    result.output += "\n[exit code " + std::to_string(exit.exit_code) + "]";
  }
  return result;
}

} // namespace troupe
