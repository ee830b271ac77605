#include "support/test_support.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <fstream>
#include <sstream>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <doctest/doctest.h>

#include "actors/runtime.hpp"
#include "tools/child_process.hpp"

extern char** environ;

namespace troupe::test {

temp_dir::temp_dir() {
  auto base = std::filesystem::temp_directory_path() / "troupe-test-XXXXXX";
  std::string pattern = base.string();
  if (mkdtemp(pattern.data()) == nullptr)
    FAIL("mkdtemp failed");
  path_ = pattern;
}

temp_dir::~temp_dir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  if (path.has_parent_path())
    std::filesystem::create_directories(path.parent_path());
  std::ofstream out{path, std::ios::binary | std::ios::trunc};
  out << text;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in{path, std::ios::binary};
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

nlohmann::json read_json(const std::filesystem::path& path) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{2};
  for (;;) {
    auto parsed = nlohmann::json::parse(read_file(path), nullptr, false);
    if (!parsed.is_discarded())
      return parsed;
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error{path.string() + " is not valid JSON"};
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  }
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in{text};
  std::string line;
  while (std::getline(in, line))
    lines.push_back(line);
  return lines;
}

std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& path) {
  std::vector<nlohmann::json> out;
  for (auto& line : split_lines(read_file(path)))
    if (!line.empty())
      out.push_back(nlohmann::json::parse(line));
  return out;
}

pid_t start_bash(const std::string& script, const std::filesystem::path& out,
                 const std::string& owner,
                 const std::map<std::string, std::string>& environment) {
  int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const char* argv[] = {"bash", "-c", script.c_str(), nullptr};
  pid_t pid = -1;
  int rc = spawn_child("/bin/bash", argv, environment, out.parent_path(), in, fd, fd, pid, owner);
  ::close(in);
  ::close(fd);
  REQUIRE(rc == 0);
  return pid;
}

tool_context context_in(const temp_dir& dir) {
  tool_context ctx;
  ctx.cwd = dir.path();
  ctx.home = dir / "home";
  return ctx;
}

bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (condition())
      return true;
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
}

bool wait_until_gone(int pid, std::chrono::milliseconds limit) {
  return wait_until(
    [pid] {
      return kill(pid, 0) != 0 ||
             read_file("/proc/" + std::to_string(pid) + "/stat").find(") Z") != std::string::npos;
    },
    limit);
}

process_result run_process(const std::vector<std::string>& argv, const process_options& opts) {
  int in_pipe[2], out_pipe[2], err_pipe[2];
  REQUIRE(pipe2(in_pipe, O_CLOEXEC) == 0);
  REQUIRE(pipe2(out_pipe, O_CLOEXEC) == 0);
  REQUIRE(pipe2(err_pipe, O_CLOEXEC) == 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  if (!opts.cwd.empty())
    posix_spawn_file_actions_addchdir_np(&actions, opts.cwd.c_str());

  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry{*e};
    auto eq = entry.find('=');
    auto name = entry.substr(0, eq);
    // troupe runs with its shipped defaults, however it is started: a setting in the
    // developer's environment (TROUPE_MAX_TOOL_OUTPUT, a provider's base URL) would hide a
    // changed default. A test sets what it needs in opts.env.
    if (name.rfind("TROUPE_", 0) == 0 || name.rfind("OPENAI_", 0) == 0 ||
        name.rfind("ANTHROPIC_", 0) == 0)
      continue;
    env[name] = entry.substr(eq + 1);
  }
  // The one exception: the suite run again with every request through libcurl
  // (tests/CMakeLists.txt) names its transport here.
  if (const char* client = std::getenv("TROUPE_TEST_HTTP_CLIENT"))
    env["TROUPE_HTTP_CLIENT"] = client;
  for (auto& [k, v] : opts.env)
    if (v.empty())
      env.erase(k);
    else
      env[k] = v;
  std::vector<std::string> env_strings;
  for (auto& [k, v] : env)
    env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings)
    envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<char*> args;
  for (auto& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  pid_t pid = -1;
  int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  REQUIRE_MESSAGE(rc == 0, "cannot start " << argv[0]);
  if (!opts.stdin_text.empty()) {
    auto n = write(in_pipe[1], opts.stdin_text.data(), opts.stdin_text.size());
    (void) n;
  }
  close(in_pipe[1]);

  process_result result;
  auto start = std::chrono::steady_clock::now();
  bool interrupted = false;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_count = 2;
  if (opts.close_stdout) {
    close(out_pipe[0]);
    fds[0].fd = -1;
    --open_count;
  }
  char buffer[65536];
  while (open_count > 0) {
    auto elapsed = std::chrono::steady_clock::now() - start;
    bool due = (opts.interrupt_after.count() > 0 && elapsed >= opts.interrupt_after) ||
               (!opts.interrupt_on_output.empty() &&
                result.out.find(opts.interrupt_on_output) != std::string::npos);
    if (due && !interrupted) {
      kill(pid, opts.interrupt_signal);
      interrupted = true;
    }
    if (elapsed > opts.timeout) {
      kill(pid, SIGKILL);
      FAIL("process timed out: " << argv[0]);
    }
    if (poll(fds, 2, 20) <= 0)
      continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP)) == 0)
        continue;
      auto n = read(fds[i].fd, buffer, sizeof buffer);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_count;
      } else {
        (i == 0 ? result.out : result.err).append(buffer, static_cast<size_t>(n));
      }
    }
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  result.max_rss_kib = usage.ru_maxrss;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

process_result run_troupe(const std::vector<std::string>& args, const process_options& opts) {
  std::vector<std::string> argv{TROUPE_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, opts);
}

script make_script(const std::vector<nlohmann::json>& lines) {
  std::string text;
  for (auto& l : lines)
    text += l.dump() + "\n";
  auto parsed = parse_script(text, "test script");
  REQUIRE_MESSAGE(static_cast<bool>(parsed), (parsed ? "" : parsed.error()));
  return std::move(*parsed);
}

void write_script(const std::filesystem::path& path, const std::vector<nlohmann::json>& lines) {
  std::string text;
  for (auto& l : lines)
    text += l.dump() + "\n";
  write_file(path, text);
}

void recording::add(nlohmann::json event) {
  std::lock_guard<std::mutex> guard{mutex_};
  events_.push_back(std::move(event));
  changed_.notify_all();
}

void recording::finish(session_ended_event ended) {
  std::lock_guard<std::mutex> guard{mutex_};
  events_.push_back(ended);
  ended_ = std::move(ended);
  changed_.notify_all();
}

session_ended_event recording::wait_for_end(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock{mutex_};
  if (!changed_.wait_for(lock, timeout, [this] { return ended_.has_value(); }))
    FAIL("the session did not end within " << timeout.count() << " ms");
  return *ended_;
}

std::vector<nlohmann::json> recording::events() {
  std::lock_guard<std::mutex> guard{mutex_};
  return events_;
}

std::vector<nlohmann::json> recording::notices(const std::string& kind) {
  std::vector<nlohmann::json> out;
  for (auto& e : events())
    if (e["event"] == "notice" && e["kind"] == kind)
      out.push_back(e);
  return out;
}

namespace {

event_sink_actor::behavior_type recorder(event_sink_actor::pointer self,
                                         std::shared_ptr<recording> into) {
  return {
    [=](const session_started_event& e) { into->add(e); },
    [=](const message_event& e) { into->add(e); },
    [=](const notice_event& e) { into->add(e); },
    [=](const generation_progress& e) { into->add(e); },
    [=](const session_status_event& e) { into->add(e); },
    [=](const hook_run_event& e) { into->add(e); },
    [=](const turn_ended_event& e) {
      into->add(nlohmann::json{{"turn_ended", nlohmann::json(e.summary)}});
    },
    [=](const session_ended_event& e) {
      into->finish(e);
      self->quit();
    },
  };
}

} // namespace

event_sink_actor spawn_recorder(caf::actor_system& sys, std::shared_ptr<recording> into) {
  return sys.spawn(recorder, std::move(into));
}

actor_system_fixture::actor_system_fixture() : cfg_(new caf::actor_system_config) {
  configure_actor_system(*cfg_);
  sys_ = std::make_unique<caf::actor_system>(*cfg_);
}

actor_system_fixture::~actor_system_fixture() = default;

file_size_limit::file_size_limit(size_t bytes) {
  struct rlimit now{};
  ::getrlimit(RLIMIT_FSIZE, &now);
  saved_cur_ = now.rlim_cur;
  saved_handler_ = ::signal(SIGXFSZ, SIG_IGN);
  now.rlim_cur = bytes;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &now) == 0);
}

file_size_limit::~file_size_limit() {
  struct rlimit now{};
  ::getrlimit(RLIMIT_FSIZE, &now);
  now.rlim_cur = saved_cur_;
  ::setrlimit(RLIMIT_FSIZE, &now);
  ::signal(SIGXFSZ, saved_handler_);
}

namespace {

size_t status_kib(const std::string& field) {
  std::ifstream in{"/proc/self/status"};
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0)
      return std::stoul(line.substr(field.size() + 1));
  return 0;
}

} // namespace

size_t peak_rss() { return status_kib("VmHWM") * 1024; }

void reset_peak_rss() {
  // Linux resets the high-water mark of the resident set when 5 is written here.
  std::ofstream out{"/proc/self/clear_refs"};
  out << "5";
}

std::set<long> children_named(const std::string& name) {
  std::set<long> found;
  for (auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream list{task.path() / "children"};
    long pid = 0;
    while (list >> pid) {
      std::ifstream comm{"/proc/" + std::to_string(pid) + "/comm"};
      std::string command;
      if (std::getline(comm, command) && command == name)
        found.insert(pid);
    }
  }
  return found;
}

std::set<long> new_children_named(const std::string& name, const std::set<long>& before) {
  std::set<long> found;
  for (long pid : children_named(name))
    if (!before.count(pid))
      found.insert(pid);
  return found;
}

std::set<long> await_new_children_named(const std::string& name, const std::set<long>& before,
                                        std::chrono::milliseconds limit,
                                        std::chrono::milliseconds settle) {
  auto until = std::chrono::steady_clock::now() + limit;
  auto found = new_children_named(name, before);
  while (found.empty() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
    found = new_children_named(name, before);
  }
  if (found.empty() || settle.count() == 0)
    return found;
  std::this_thread::sleep_for(settle);
  for (long pid : new_children_named(name, before))
    found.insert(pid);
  return found;
}

} // namespace troupe::test
