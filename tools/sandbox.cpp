#include "tools/sandbox.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>

#include "tools/real_path.hpp"

namespace troupe {

namespace {

std::filesystem::path real_or_given(const std::filesystem::path& path) {
  auto real = real_location(path);
  return real ? *real : path.lexically_normal();
}

bool is_dir(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec);
}

bool present(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

// Every private /tmp made and not yet removed, for an exit that runs no destructor. Never
// freed: a policy may be let go after the statics of the exit are.
class live_temps {
public:
  void add(const std::filesystem::path& path) {
    std::lock_guard<std::mutex> lock{mutex_};
    paths_.insert(path);
  }

  void remove(const std::filesystem::path& path) {
    std::lock_guard<std::mutex> lock{mutex_};
    paths_.erase(path);
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }

  void remove_all() {
    std::lock_guard<std::mutex> lock{mutex_};
    for (auto& path : paths_) {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
    paths_.clear();
  }

private:
  std::mutex mutex_;
  std::set<std::filesystem::path> paths_;
};

live_temps& made_temps() {
  static auto* temps = new live_temps;
  return *temps;
}

} // namespace

void remove_sandbox_temps() { made_temps().remove_all(); }

std::optional<sandbox_mode> parse_sandbox_mode(std::string_view text) {
  if (text == "off")
    return sandbox_mode::off;
  if (text == "read-only")
    return sandbox_mode::read_only;
  if (text == "workspace-write")
    return sandbox_mode::workspace_write;
  return std::nullopt;
}

std::string summary(const sandbox_settings& settings) {
  if (settings.mode == sandbox_mode::off)
    return "off (" + settings.mode_source + ")";
  std::string text = std::string{to_string(settings.mode)} +
                     (settings.network ? ", network on" : ", no network");
  if (!settings.add_dirs.empty() && settings.mode == sandbox_mode::workspace_write)
    text += ", " + std::to_string(settings.add_dirs.size()) + " more writable " +
            (settings.add_dirs.size() == 1 ? "directory" : "directories");
  return text;
}

const char* to_string(sandbox_mode mode) {
  switch (mode) {
    case sandbox_mode::read_only:
      return "read-only";
    case sandbox_mode::workspace_write:
      return "workspace-write";
    default:
      return "off";
  }
}

sandbox_policy::sandbox_policy(const sandbox_settings& settings,
                               const std::filesystem::path& workspace)
  : mode_(settings.mode), bwrap_(settings.bwrap), network_(settings.network),
    workspace_(real_or_given(workspace)), temp_base_(settings.temp_base) {
  std::vector<std::filesystem::path> roots{workspace_};
  for (auto& dir : settings.add_dirs)
    roots.push_back(real_or_given(dir));
  // Parents before what they hold: a bind over a bind, never under it.
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  writable_ = std::move(roots);
  if (mode_ != sandbox_mode::workspace_write)
    return; // nothing is writable, so nothing needs keeping read-only
  for (auto& root : writable_) {
    // A repository's hooks and config run commands outside the sandbox the next time the user
    // runs git (a submodule's or a linked worktree's too, and `commondir` or a `.git` file
    // point git at another config); a project's settings name the hooks troupe runs.
    auto git = root / ".git";
    if (is_dir(git)) {
      pinned_.push_back(git);
      read_only_.push_back({git / "hooks", "the repository's hooks", true});
      for (auto name : {"config", "config.worktree", "commondir", "modules", "worktrees"})
        read_only_.push_back({git / name, "the repository's configuration"});
      for (auto name : {"commondir", "modules", "worktrees"})
        if (!present(git / name))
          watched_.push_back(git / name);
    } else if (present(git)) {
      read_only_.push_back({git, "the file that names the repository"});
    } else {
      new_repositories_.push_back(git); // a `git init` during the session: judged as it goes
    }
    // Made only in the workspace: an --add-dir is not a project of troupe's. Claude Code's
    // project settings are troupe's too (permissions, hooks): a model must not rewrite either.
    read_only_.push_back({root / ".troupe", "the project's troupe settings", root == workspace_});
    read_only_.push_back({root / ".claude", "the project's Claude Code settings", root == workspace_});
  }
  for (auto& path : settings.keep_read_only) {
    auto real = real_or_given(path);
    if (under_writable(real))
      read_only_.push_back({real, "troupe's own files", !present(real)});
  }
}

sandbox_policy::~sandbox_policy() {
  move_planted(); // a background task's last act; nobody is left to tell
  if (auto temp = made_temp(); !temp.empty())
    made_temps().remove(temp);
}

expected<std::filesystem::path> sandbox_policy::temp_dir() const {
  std::call_once(temp_made_, [this] {
    auto pattern = (temp_base_ / "troupe-sandbox-XXXXXX").string();
    if (::mkdtemp(pattern.data())) {
      temp_ = pattern;
      made_temps().add(temp_);
      temp_ready_.store(true, std::memory_order_release);
    } else {
      temp_problem_ = "cannot make the sandbox's private /tmp in " + temp_base_.string() + ": " +
                      std::strerror(errno);
    }
  });
  if (temp_.empty())
    return failure{temp_problem_};
  return temp_;
}

std::filesystem::path sandbox_policy::made_temp() const {
  return temp_ready_.load(std::memory_order_acquire) ? temp_ : std::filesystem::path{};
}

bool sandbox_policy::under_writable(const std::filesystem::path& real) const {
  return std::any_of(writable_.begin(), writable_.end(),
                     [&](auto& root) { return lies_within(real, root); });
}

expected<bool> sandbox_policy::wrap(std::string& program, std::vector<std::string>& argv,
                                    const std::filesystem::path& cwd, int& pass_fd) const {
  pass_fd = -1;
  if (mode_ == sandbox_mode::off)
    return true;
  auto support = probe_sandbox(bwrap_);
  if (!support.works)
    return failure{"the sandbox is not available: " + support.problem};
  auto temp = temp_dir();
  if (!temp)
    return failure{temp.error()};
  // A workspace that is / (or a read-only run's root there) is the first bind, not the last:
  // bound after /dev, /proc and /tmp, it would hide them.
  bool root_writable = mode_ == sandbox_mode::workspace_write &&
                       std::find(writable_.begin(), writable_.end(), "/") != writable_.end();
  std::vector<std::string> wrapped = {"bwrap",
                                      root_writable ? "--bind" : "--ro-bind",
                                      "/",
                                      "/",
                                      "--dev",
                                      "/dev",
                                      "--proc",
                                      "/proc",
                                      "--unshare-pid",
                                      // A user namespace and no capabilities even for root:
                                      // root keeps CAP_SYS_ADMIN otherwise, and a remount
                                      // undoes every read-only bind.
                                      "--unshare-user",
                                      "--disable-userns",
                                      "--cap-drop",
                                      "ALL",
                                      // A troupe killed outright (SIGKILL) takes the sandbox
                                      // and all in it along. The kernel signals bubblewrap
                                      // when the THREAD that started it ends: every sandbox is
                                      // started on a scheduler worker (the executor, an MCP
                                      // server's actor), troupe's main thread or the thread a
                                      // shell_ahead keeps, which live as long as the process.
                                      // Never start one from a detached actor's thread, which
                                      // can end before it.
                                      "--die-with-parent",
                                      "--bind",
                                      temp->string(),
                                      "/tmp"};
  if (!network_)
    wrapped.push_back("--unshare-net");
  // The roots after /tmp: one under /tmp must show through the private one.
  for (auto& root : writable_) {
    if (root == "/")
      continue;
    wrapped.push_back(mode_ == sandbox_mode::workspace_write ? "--bind" : "--ro-bind");
    wrapped.push_back(root.string());
    wrapped.push_back(root.string());
  }
  // What is kept read-only, and every directory between it and its writable root bound onto
  // itself: a directory that holds a bind can be renamed away with it (a new one made in its
  // place), one that is a bind cannot.
  std::set<std::filesystem::path> pins{pinned_.begin(), pinned_.end()};
  std::vector<std::filesystem::path> read_only_binds;
  for (auto& entry : read_only_) {
    if (entry.make && !present(entry.path)) {
      // Kept read-only even before it exists: what is written there would run outside.
      std::error_code ec;
      std::filesystem::create_directories(entry.path, ec);
    }
    if (!present(entry.path))
      continue;
    read_only_binds.push_back(entry.path);
    for (auto up = entry.path.parent_path(); up.has_relative_path() && under_writable(up) &&
                                             std::find(writable_.begin(), writable_.end(), up) ==
                                               writable_.end();
         up = up.parent_path())
      pins.insert(up);
  }
  for (auto& pinned : pins) // a set: parents before what they hold
    wrapped.insert(wrapped.end(), {"--bind", pinned.string(), pinned.string()});
  for (auto& path : read_only_binds)
    wrapped.insert(wrapped.end(), {"--ro-bind", path.string(), path.string()});
  wrapped.insert(wrapped.end(), {"--setenv", "TMPDIR", "/tmp", "--chdir", cwd.string()});
  auto fd = socket_filter_descriptor(network_);
  if (!fd)
    return failure{fd.error()};
  pass_fd = *fd;
  if (pass_fd >= 0)
    wrapped.insert(wrapped.end(), {"--seccomp", "3"});
  wrapped.push_back("--");
  wrapped.push_back(program);
  wrapped.insert(wrapped.end(), argv.begin() + (argv.empty() ? 0 : 1), argv.end());
  program = support.bwrap;
  argv = std::move(wrapped);
  return true;
}

std::string sandbox_policy::walls() const {
  std::string text;
  if (mode_ == sandbox_mode::workspace_write)
    for (auto& root : writable_)
      text += root.string() + ", ";
  return text + "and a private /tmp";
}

std::string sandbox_policy::write_refusal(const std::filesystem::path& real) const {
  if (mode_ == sandbox_mode::off)
    return {};
  for (auto& entry : read_only_)
    if (lies_within(real, entry.path))
      return "Permission denied (EACCES): the sandbox keeps " + entry.path.string() +
             " read-only (" + entry.why + ")";
  if (auto temp = made_temp(); !temp.empty() && lies_within(real, temp))
    return {};
  if (mode_ == sandbox_mode::workspace_write && under_writable(real))
    return {};
  return "Permission denied (EACCES): the sandbox (" + std::string{to_string(mode_)} +
         ") refuses writes to " + real.string() +
         (hides(real) ? " (a link led there: it is the host's /tmp, not the sandbox's)" : "") +
         "; writable: " +
         (mode_ == sandbox_mode::workspace_write ? walls() : "only a private /tmp");
}

bool sandbox_policy::hides(const std::filesystem::path& path) const {
  if (mode_ == sandbox_mode::off || !lies_within(path, "/tmp"))
    return false;
  if (auto temp = made_temp(); !temp.empty() && lies_within(path, temp))
    return false;
  return !under_writable(path); // a root under /tmp shows through the private one
}

std::filesystem::path sandbox_policy::host_path(const std::filesystem::path& path) const {
  if (!hides(path))
    return path;
  auto temp = temp_dir();
  return temp ? *temp / path.lexically_relative("/tmp") : path;
}

namespace {

// What in a repository made inside the sandbox would run a command outside it, the next time
// the user runs git there; empty for what `git init` (and a remote, a branch, a name) makes.
std::string runs_commands(const std::filesystem::path& git) {
  std::error_code ec;
  if (!std::filesystem::is_directory(std::filesystem::symlink_status(git, ec)))
    return "it is not a plain directory (a file or a link names another repository)";
  for (auto name : {"commondir", "config.worktree", "modules", "worktrees"})
    if (present(git / name))
      return std::string{name} + " points git elsewhere";
  for (std::filesystem::directory_iterator hook{git / "hooks", ec}, end; !ec && hook != end;
       hook.increment(ec))
    if (hook->path().extension() != ".sample")
      return "hooks/" + hook->path().filename().string() + " would run";
  std::ifstream config{git / "config"};
  std::string line, section;
  while (std::getline(config, line)) {
    auto text = line.substr(0, line.find_first_of("#;"));
    auto first = text.find_first_not_of(" \t");
    if (first == std::string::npos)
      continue;
    text = text.substr(first);
    if (text[0] == '[') {
      // `[remote "origin"]` is section remote, subsection origin: only the section counts.
      section = text.substr(1, text.find_first_of(" \"]") - 1);
      for (auto& c : section)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      continue;
    }
    auto key = text.substr(0, text.find_first_of(" \t="));
    for (auto& c : key)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    static const std::set<std::string> harmless = {
      "core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates",
      "core.ignorecase", "core.precomposeunicode", "core.symlinks", "user.name", "user.email",
      "init.defaultbranch", "branch.remote", "branch.merge", "remote.fetch",
      "extensions.objectformat"};
    auto full = section + "." + key;
    if (full == "remote.url" && text.find("ext::") == std::string::npos)
      continue;
    if (!harmless.count(full))
      return "its config sets " + full;
  }
  return {};
}

std::string move_aside(const std::filesystem::path& path, const std::string& why) {
  auto aside = path;
  aside += ".moved-by-troupe-" + std::to_string(::getpid()) + "-" +
           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  std::error_code ec;
  std::filesystem::rename(path, aside, ec);
  return "[troupe sandbox: " + path.string() +
         (ec ? " was made and could not be moved aside (" + ec.message() + ")"
             : " was made and is moved aside to " + aside.filename().string()) +
         ": " + why + ", which would run outside the walls the next time git runs here]";
}

} // namespace

std::string sandbox_policy::move_planted() const {
  std::string moved;
  auto add = [&](const std::string& note) {
    moved += std::string{moved.empty() ? "" : "\n"} + note;
  };
  for (auto& path : watched_) {
    std::error_code ec;
    if (std::filesystem::exists(std::filesystem::symlink_status(path, ec)))
      add(move_aside(path, "it points git at hooks and config elsewhere"));
  }
  for (auto& git : new_repositories_) {
    std::error_code ec;
    if (!std::filesystem::exists(std::filesystem::symlink_status(git, ec)))
      continue;
    if (auto why = runs_commands(git); !why.empty())
      add(move_aside(git, why));
  }
  return moved;
}

std::string sandbox_policy::inside_view(std::string text) const {
  auto temp = made_temp();
  if (temp.empty())
    return text;
  const auto host = temp.string();
  for (auto at = text.find(host); at != std::string::npos; at = text.find(host, at + 4)) {
    auto end = at + host.size();
    if (end < text.size() && text[end] != '/' && text[end] != ' ' && text[end] != ')' &&
        text[end] != '\n' && text[end] != ':' && text[end] != '\'' && text[end] != '"')
      continue; // a longer name that only starts alike
    text.replace(at, host.size(), "/tmp");
  }
  return text;
}

std::string sandbox_policy::note_for(std::string_view output) const {
  if (mode_ == sandbox_mode::off)
    return {};
  std::string note;
  if (output.find("Read-only file system") != std::string_view::npos)
    note += "[troupe sandbox (" + std::string{to_string(mode_)} +
            "): the write was refused; writable: " +
            (mode_ == sandbox_mode::workspace_write ? walls() : "only a private /tmp") +
            (read_only_.empty() ? "" : "; .git/hooks, .git/config, .troupe and .claude stay read-only") +
            "]";
  // EPERM alone is too common (chmod, kill) to be the network's: only beside a socket.
  static constexpr std::string_view network_signs[] = {
    "Network is unreachable", "Could not resolve host", "Temporary failure in name resolution",
    "Name or service not known", "Couldn't connect to server", "Failed to connect"};
  static constexpr std::string_view socket_words[] = {"socket", "connect", "Connect"};
  auto has = [&](auto& words) {
    return std::any_of(std::begin(words), std::end(words),
                       [&](auto word) { return output.find(word) != output.npos; });
  };
  bool refused_socket =
    output.find("Operation not permitted") != output.npos && has(socket_words);
  if (!network_ && (refused_socket || has(network_signs)))
    note += std::string{note.empty() ? "" : "\n"} +
            "[troupe sandbox: tool processes have no network and no Unix sockets (socket() "
            "fails with EPERM); --sandbox-network allows the network]";
  else if (network_ && refused_socket)
    note += std::string{note.empty() ? "" : "\n"} +
            "[troupe sandbox: Unix sockets are refused (socket(AF_UNIX) fails with EPERM): the "
            "host's (docker's, ssh-agent's, a desktop's) would be a way out of the walls]";
  return note;
}

} // namespace troupe
