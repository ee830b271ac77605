#include "tools/sandbox_support.hpp"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "protocol/private_files.hpp"
#include "tools/child_process.hpp"

namespace troupe {

namespace {

// The seccomp program bwrap loads before it starts the command. A Unix socket of the host (a
// daemon's such as docker's, the user's systemd or dbus, troupe's own) is reachable through
// the read-only file system and would be a way out of every wall: socket(2) for AF_UNIX fails
// with EPERM always. Without the network, socket(2) fails for every family but netlink (which
// sees only the sandbox's own network namespace), so a connect is refused with an error that
// says so. io_uring, which could make sockets without socket(2), is refused in both cases.
// socketpair(2) stays. A foreign system-call ABI (32-bit calls on x86-64, x32) is refused
// altogether.
std::vector<sock_filter> socket_filter(bool network) {
#if defined(__x86_64__)
  constexpr uint32_t arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
  constexpr uint32_t arch = AUDIT_ARCH_AARCH64;
#else
  return {};
#endif
#if defined(__x86_64__) || defined(__aarch64__)
  constexpr uint32_t refuse = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
  constexpr uint32_t arch_offset = offsetof(struct seccomp_data, arch);
  constexpr uint32_t nr_offset = offsetof(struct seccomp_data, nr);
  constexpr uint32_t domain_offset = offsetof(struct seccomp_data, args); // low half of args[0]
  std::vector<sock_filter> program = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, arch_offset),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, refuse),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, nr_offset),
#if defined(__x86_64__)
    BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1), // x32
    BPF_STMT(BPF_RET | BPF_K, refuse),
#endif
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 3, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_io_uring_setup, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, refuse),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, domain_offset),
  };
  if (network) { // every family but AF_UNIX
    program.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 0, 1));
    program.push_back(BPF_STMT(BPF_RET | BPF_K, refuse));
    program.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  } else { // netlink only
    program.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_NETLINK, 0, 1));
    program.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    program.push_back(BPF_STMT(BPF_RET | BPF_K, refuse));
  }
  return program;
#endif
}

} // namespace

// Never 0-3 itself: the child's fd 3 is made from it with dup2, which would keep close-on-exec
// on a copy onto itself.
expected<int> socket_filter_descriptor(bool network) {
  auto program = socket_filter(network);
  if (program.empty())
    return -1;
  int fd = static_cast<int>(::syscall(SYS_memfd_create, "troupe-seccomp", MFD_CLOEXEC));
  if (fd < 0)
    return failure{std::string{"cannot make the sandbox's seccomp filter: "} +
                   std::strerror(errno)};
  if (fd <= 3) {
    int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 4);
    ::close(fd);
    if (moved < 0)
      return failure{std::string{"cannot make the sandbox's seccomp filter: "} +
                     std::strerror(errno)};
    fd = moved;
  }
  auto bytes = program.size() * sizeof(sock_filter);
  if (::write(fd, program.data(), bytes) != static_cast<ssize_t>(bytes) ||
      ::lseek(fd, 0, SEEK_SET) != 0) {
    auto problem = std::string{"cannot write the sandbox's seccomp filter: "} +
                   std::strerror(errno);
    ::close(fd);
    return failure{problem};
  }
  return fd;
}


namespace {

// A working probe is remembered per user and boot (bwrap, namespaces: ~6 ms on the start-up
// path of every run otherwise), keyed by what its answer depends on: the bwrap binary (path,
// inode, size, change time) and the kernel's settings for user namespaces. Any change, a new
// boot or a failed probe means probing again; only "works" is remembered.
std::string probe_key(const std::string& bwrap) {
  struct stat info {};
  if (::stat(bwrap.c_str(), &info) != 0)
    return {};
  std::string key = "bwrap " + bwrap + " " + std::to_string(info.st_dev) + ":" +
                    std::to_string(info.st_ino) + " " + std::to_string(info.st_size) + " " +
                    std::to_string(info.st_ctim.tv_sec) + "." +
                    std::to_string(info.st_ctim.tv_nsec) + "\n";
  for (const char* setting :
       {"/proc/sys/kernel/random/boot_id", "/proc/sys/user/max_user_namespaces",
        "/proc/sys/user/max_pid_namespaces", "/proc/sys/user/max_net_namespaces",
        "/proc/sys/user/max_mnt_namespaces", "/proc/sys/kernel/unprivileged_userns_clone",
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"}) {
    std::string value;
    read_whole_file(setting, value);
    key += std::string{setting} + " " + value;
  }
  return key;
}

// The user's runtime directory, else a directory of the user's own under /tmp.
std::filesystem::path probe_cache_file() {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  auto dir = runtime != nullptr && *runtime == '/'
               ? std::filesystem::path{runtime} / "troupe"
               : std::filesystem::path{"/tmp"} / ("troupe-" + std::to_string(::getuid()));
  return dir / "sandbox-works";
}

// Only a directory that is this user's and closed to everyone else proves anything.
bool private_to_user(const std::filesystem::path& path, bool directory) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0 &&
         (directory ? S_ISDIR(info.st_mode) : S_ISREG(info.st_mode)) &&
         info.st_uid == ::getuid() && (info.st_mode & 077) == 0;
}

// What the remembered file says, from a directory closed to others; nothing otherwise.
std::optional<std::string> remembered_key(const std::filesystem::path& file) {
  std::string content;
  if (!private_to_user(file.parent_path(), true) || !read_whole_file(file, content).empty())
    return std::nullopt;
  return content;
}

bool probe_remembered(const std::string& key) {
  auto file = probe_cache_file();
  return !key.empty() && private_to_user(file, false) && remembered_key(file) == key;
}

// A failed probe of the bwrap a remembered answer is about takes that answer back (what the key
// does not see, an AppArmor profile or a container's seccomp filter, may have changed).
void forget_probe(const std::string& bwrap) {
  auto file = probe_cache_file();
  if (auto key = remembered_key(file); key && key->rfind("bwrap " + bwrap + " ", 0) == 0)
    ::unlink(file.c_str());
}

void remember_probe(const std::string& key) {
  auto file = probe_cache_file();
  if (key.empty() || !make_private_dirs(file.parent_path()).empty() ||
      !private_to_user(file.parent_path(), true))
    return;
  write_private_file(file, key); // best effort: the next run probes again if it failed
}

sandbox_support look_for_sandbox(const std::string& bwrap, bool recall) {
  sandbox_support support;
  support.bwrap = bwrap;
  if (bwrap.empty()) {
    support.problem = "bubblewrap (bwrap) is not installed; install the package bubblewrap";
    return support;
  }
  if (::access(bwrap.c_str(), X_OK) != 0) {
    support.problem = bwrap + " is not an executable";
    return support;
  }
  auto key = probe_key(bwrap);
  if (recall && probe_remembered(key)) {
    support.works = true;
    return support;
  }
  // Every namespace a tool's sandbox uses, with nothing bound: what fails here fails there.
  int err[2];
  if (::pipe2(err, O_CLOEXEC) != 0) {
    support.problem = std::string{"cannot test bubblewrap: "} + std::strerror(errno);
    return support;
  }
  int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  const char* argv[] = {"bwrap",        "--ro-bind",      "/",         "/",     "--dev",
                        "/dev",         "--proc",         "/proc",     "--unshare-pid",
                        "--unshare-net", "--unshare-user", "--disable-userns", "--cap-drop",
                        "ALL",          "--tmpfs",        "/tmp",      "--",    "/bin/sh",
                        "-c",           "echo troupe-sandbox-ok", nullptr};
  pid_t pid = -1;
  // Its word that it ran, not only an exit status: anything can exit 0.
  int rc = spawn_child(support.bwrap, argv, {}, "/", null_fd, err[1], err[1], pid);
  ::close(err[1]);
  if (null_fd >= 0)
    ::close(null_fd);
  std::string said;
  if (rc == 0) {
    char buffer[512];
    ssize_t n;
    while ((n = ::read(err[0], buffer, sizeof buffer)) > 0 && said.size() < 4096)
      said.append(buffer, static_cast<size_t>(n));
    int status = 0;
    wait_child(pid, status);
    const std::string ok = "troupe-sandbox-ok\n";
    auto said_ok = said.find(ok);
    support.works = WIFEXITED(status) && WEXITSTATUS(status) == 0 && said_ok != std::string::npos;
    if (said_ok != std::string::npos)
      said.erase(said_ok, ok.size());
    else if (support.works == false && said.empty() && WIFEXITED(status) &&
             WEXITSTATUS(status) == 0)
      said = "it exited 0 without running the test command";
  } else {
    said = std::strerror(rc);
  }
  ::close(err[0]);
  if (support.works)
    remember_probe(key);
  else
    forget_probe(bwrap);
  if (!support.works) {
    while (!said.empty() && (said.back() == '\n' || said.back() == ' '))
      said.pop_back();
    support.problem = support.bwrap + " cannot build a sandbox here" +
                      (said.empty() ? std::string{} : " (" + said + ")") +
                      "; it may need user namespaces (see /proc/sys/user/max_user_namespaces, "
                      "and kernel.apparmor_restrict_unprivileged_userns on Ubuntu)";
  }
  return support;
}

// What this process found, per bwrap: one probe (or remembered answer) per run.
sandbox_support known_sandbox(const std::string& bwrap, bool recall) {
  static std::mutex mutex;
  static std::map<std::string, sandbox_support> known;
  std::lock_guard<std::mutex> lock{mutex};
  if (!recall) // asked to test now: what it finds is the answer from here on
    return known.insert_or_assign(bwrap, look_for_sandbox(bwrap, false)).first->second;
  auto found = known.find(bwrap);
  if (found == known.end())
    found = known.emplace(bwrap, look_for_sandbox(bwrap, true)).first;
  return found->second;
}

} // namespace

sandbox_support probe_sandbox(const std::string& bwrap) { return known_sandbox(bwrap, true); }

std::vector<std::string> describe_sandbox_support(const std::string& bwrap) {
  std::vector<std::string> lines;
  // A check the user asked for tests bwrap now, whatever an earlier run remembered; its
  // answer is the one probe_sandbox gives from here on (the check's exit status).
  auto support = known_sandbox(bwrap, false);
  lines.push_back("bubblewrap: " +
                  (support.bwrap.empty() ? std::string{"not found"}
                   : ::access(support.bwrap.c_str(), X_OK) != 0
                     ? support.bwrap + " (not an executable)"
                     : support.bwrap));
  std::string namespaces;
  if (read_whole_file("/proc/sys/user/max_user_namespaces", namespaces).empty())
    namespaces = namespaces.substr(0, namespaces.find('\n'));
  lines.push_back("user namespaces: " +
                  (namespaces.empty() ? std::string{"unknown"}
                                      : "max_user_namespaces = " + namespaces));
  long landlock = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, 1U);
  lines.push_back("landlock: " + (landlock > 0 ? "ABI " + std::to_string(landlock)
                                               : std::string{"not available"}) +
                  " (not used: troupe's sandbox is bubblewrap)");
  lines.push_back(std::string{"seccomp: "} +
                  (::prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 ? "available" : "not available"));
  lines.push_back(support.works ? "sandbox: works (a test sandbox ran); --sandbox read-only and "
                                  "workspace-write are available"
                                : "sandbox: NOT available: " + support.problem);
  return lines;
}

} // namespace troupe
