#include "tools/process_reaper.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tools/child_process.hpp"

namespace troupe {

namespace {

struct process_entry {
  pid_t pid = 0;
  pid_t ppid = 0;
  char state = '?';
};

// Reads at most `cap` bytes of a /proc file; empty when it cannot be read.
std::string read_proc_file(const std::string& path, size_t cap) {
  std::string out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return out;
  char buffer[4096];
  while (out.size() < cap) {
    auto n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    out.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

// A process's pid, parent and state from /proc/<pid>/stat; pid 0 when it is gone.
process_entry read_stat(pid_t pid) {
  auto stat = read_proc_file("/proc/" + std::to_string(pid) + "/stat", 1024);
  // "pid (comm) state ppid …": the name may hold spaces and parentheses; the last ')' ends it.
  auto close = stat.rfind(')');
  if (close == std::string::npos || close + 4 >= stat.size())
    return {};
  process_entry p;
  p.pid = pid;
  p.state = stat[close + 2];
  p.ppid = static_cast<pid_t>(std::strtol(stat.c_str() + close + 4, nullptr, 10));
  return p;
}

// Every process's pid, parent and state, from /proc/<pid>/stat: one pass over /proc.
std::vector<process_entry> read_process_table() {
  std::vector<process_entry> table;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr)
    return table;
  while (auto* entry = ::readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0')
      continue;
    if (auto p = read_stat(static_cast<pid_t>(pid)); p.pid != 0)
      table.push_back(p);
  }
  ::closedir(proc);
  return table;
}

// A children list read in one read(): the kernel walks the list once, from child to child.
// Read in pieces, each piece would start again by position, and a child that exits meanwhile
// would hide a live one behind it. Null when the list does not fit (a table scan then).
std::optional<std::string> read_children_list(const std::string& path) {
  constexpr size_t room = 1 << 16; // 64 KiB: thousands of pids
  std::string list(room, '\0');
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return std::string{}; // the thread is gone
  ssize_t n;
  while ((n = ::read(fd, list.data(), room)) < 0 && errno == EINTR) {
  }
  ::close(fd);
  if (n < 0)
    return std::string{};
  if (static_cast<size_t>(n) >= room)
    return std::nullopt;
  list.resize(static_cast<size_t>(n));
  return list;
}

// The children of `pid`, from /proc/<pid>/task/<tid>/children of each of its threads (an
// adopted orphan hangs off whichever thread the kernel picked); null when a list was too long
// to read whole. Reads only this process's own tree, not every process of the machine: a
// fan-out of a thousand agents ends a thousand sessions, and each end sweeps for leftovers.
std::optional<std::vector<pid_t>> children_of(pid_t pid) {
  std::vector<pid_t> out;
  auto tasks_path = "/proc/" + std::to_string(pid) + "/task";
  DIR* tasks = ::opendir(tasks_path.c_str());
  if (tasks == nullptr)
    return out;
  while (auto* task = ::readdir(tasks)) {
    if (task->d_name[0] == '.')
      continue;
    auto read = read_children_list(tasks_path + "/" + task->d_name + "/children");
    if (!read) {
      ::closedir(tasks);
      return std::nullopt;
    }
    const auto& list = *read;
    const char* at = list.c_str();
    for (;;) {
      char* end = nullptr;
      long child = std::strtol(at, &end, 10);
      if (end == at)
        break;
      if (child > 0)
        out.push_back(static_cast<pid_t>(child));
      at = end;
    }
  }
  ::closedir(tasks);
  return out;
}

// True when the kernel lists a thread's children in /proc (CONFIG_PROC_CHILDREN); without it
// the whole process table is read instead.
bool lists_children() {
  static const bool listed =
    ::access(("/proc/self/task/" + std::to_string(::getpid()) + "/children").c_str(), R_OK) == 0;
  return listed;
}

// The state letter of /proc/<pid>/stat ('Z' for a zombie), or '?' when it is gone.
char state_of(pid_t pid) { return read_stat(pid).state; }

// True when a process tagged `value` belongs to `owner`: the owner itself or one of its units.
bool owner_matches(const std::string& value, const std::string& owner) {
  return value == owner || (value.size() > owner.size() &&
                            value.compare(0, owner.size(), owner) == 0 && value[owner.size()] == '/');
}

// True when the process's environment names `owner` or one of its units as its owner. A child
// started here is known without reading its environment.
bool owned_by(pid_t pid, const std::string& owner) {
  if (auto started = started_owner(pid))
    return owner_matches(*started, owner);
  auto path = "/proc/" + std::to_string(pid) + "/environ";
  auto environment = read_proc_file(path, 1 << 20);
  // A process in the middle of an exec shows no environment for a moment: a live one read
  // empty is read again before it is judged untagged (one started with `setsid cmd &` is often
  // caught so, its starter having just ended).
  for (int again = 0; again < 3 && environment.empty(); ++again) {
    if (auto state = state_of(pid); state == 'Z' || state == '?')
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds{2});
    environment = read_proc_file(path, 1 << 20);
  }
  auto key = std::string{process_owner_variable} + "=";
  size_t at = 0;
  while (at < environment.size()) {
    auto end = environment.find('\0', at);
    if (end == std::string::npos)
      end = environment.size();
    if (environment.compare(at, key.size(), key) == 0)
      return owner_matches(environment.substr(at + key.size(), end - at - key.size()), owner);
    at = end + 1;
  }
  return false;
}

bool is_subreaper() {
  int flag = 0;
  return ::prctl(PR_GET_CHILD_SUBREAPER, &flag, 0, 0, 0) == 0 && flag != 0;
}

// Adds every descendant of `targets` (never this process) to them, with `children_of_pid`
// (nullopt: a list that could not be read; then false).
template <class ChildrenOf>
bool add_descendants(std::vector<pid_t>& targets, pid_t self, ChildrenOf children_of_pid) {
  std::unordered_set<pid_t> seen{targets.begin(), targets.end()};
  for (size_t i = 0; i < targets.size(); ++i) {
    std::optional<std::vector<pid_t>> below = children_of_pid(targets[i]);
    if (!below)
      return false;
    for (auto child : *below)
      if (child != self && seen.insert(child).second)
        targets.push_back(child);
  }
  return true;
}

// The selected children of this process and all their descendants, from the children lists;
// null when a list could not be read whole.
std::optional<std::vector<pid_t>> targets_by_walk(pid_t self,
                                                  const std::function<bool(pid_t)>& selected) {
  auto direct = children_of(self);
  if (!direct)
    return std::nullopt;
  std::vector<pid_t> targets;
  for (auto child : *direct)
    if (selected(child))
      targets.push_back(child);
  if (!add_descendants(targets, self, children_of))
    return std::nullopt;
  return targets;
}

// The same from one pass over /proc: below this process only, or (not a subreaper) every
// selected process anywhere; with each one's state.
std::vector<pid_t> targets_by_table(pid_t self, bool below_self,
                                    const std::function<bool(pid_t)>& selected,
                                    std::unordered_map<pid_t, char>& states) {
  auto table = read_process_table();
  std::unordered_map<pid_t, std::vector<pid_t>> children;
  for (auto& p : table) {
    children[p.ppid].push_back(p.pid);
    states[p.pid] = p.state;
  }
  std::vector<pid_t> targets;
  if (below_self) {
    for (auto child : children[self])
      if (selected(child))
        targets.push_back(child);
  } else {
    for (auto& p : table)
      if (p.pid != self && p.state != 'Z' && selected(p.pid))
        targets.push_back(p.pid);
  }
  add_descendants(targets, self, [&](pid_t pid) {
    auto found = children.find(pid);
    return std::optional<std::vector<pid_t>>{found != children.end() ? found->second
                                                                     : std::vector<pid_t>{}};
  });
  return targets;
}

/// A process that forks as fast as it is killed is not waited for forever.
constexpr int max_rounds = 100;

// Kills the processes `owner` selects (all of this process's children when `everything`) and
// their descendants, scanning again until a scan finds nobody new: a process may fork between
// the scan and the kill, and its child then shows up in the next one.
size_t kill_selected(const std::string& owner, bool everything) {
  const pid_t self = ::getpid();
  // Orphans stay below a subreaper; without one they went to init and may be anywhere.
  const bool below_self = everything || is_subreaper();
  // Below this process its own tree is walked, where the kernel lists children.
  const bool walk = below_self && lists_children();
  std::unordered_set<pid_t> signalled;
  std::unordered_map<pid_t, bool> verdicts;
  std::function<bool(pid_t)> selected = [&](pid_t pid) {
    if (everything)
      return true;
    auto known = verdicts.find(pid);
    if (known != verdicts.end())
      return known->second;
    return verdicts[pid] = owned_by(pid, owner);
  };
  for (int round = 0; round < max_rounds; ++round) {
    std::unordered_map<pid_t, char> states;
    auto walked = walk ? targets_by_walk(self, selected) : std::nullopt;
    auto targets = walked ? std::move(*walked) : targets_by_table(self, below_self, selected, states);
    size_t fresh = 0;
    for (auto pid : targets) {
      if (signalled.count(pid) != 0)
        continue;
      // A zombie takes a signal without dying: signalling it is no progress.
      auto found = states.find(pid);
      if ((found != states.end() ? found->second : state_of(pid)) == 'Z')
        continue;
      if (::kill(pid, SIGKILL) == 0) {
        signalled.insert(pid);
        ++fresh;
      }
    }
    if (fresh == 0)
      break;
  }
  reap_orphans();
  return signalled.size();
}

} // namespace

size_t stop_owned_processes(const std::string& owner) {
  if (owner.empty())
    return 0;
  return kill_selected(owner, false);
}

size_t stop_all_descendants() {
  return kill_selected("", true);
}

void reap_orphans() {
  // A peek first: with no exited child at all there is nothing to scan for.
  siginfo_t info;
  std::memset(&info, 0, sizeof info);
  if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0)
    return;
  // Only this process's own children can be reaped here; waitpid skips those still running.
  const pid_t self = ::getpid();
  if (lists_children())
    if (auto children = children_of(self)) {
      reap_unclaimed(*children);
      return;
    }
  std::vector<pid_t> zombies;
  for (auto& p : read_process_table())
    if (p.ppid == self && p.state == 'Z')
      zombies.push_back(p.pid);
  reap_unclaimed(zombies);
}

process_reaper::process_reaper(std::chrono::milliseconds period) {
  subreaper_ = ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
  error_ = subreaper_ ? 0 : errno;
  thread_ = std::thread{[this, period] {
    // Signals are for the threads that wait for them (the CLI's forwarder), never this one.
    sigset_t all;
    sigfillset(&all);
    ::pthread_sigmask(SIG_BLOCK, &all, nullptr);
    std::unique_lock<std::mutex> lock{mutex_};
    while (!stopping_) {
      wake_.wait_for(lock, period, [this] { return stopping_; });
      lock.unlock();
      reap_orphans();
      lock.lock();
    }
  }};
}

process_reaper::~process_reaper() {
  {
    std::lock_guard<std::mutex> lock{mutex_};
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  stop_all_descendants();
}

} // namespace troupe
