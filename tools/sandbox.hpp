#pragma once
// The sandbox every tool process runs in: bubblewrap (Linux namespaces) around the session's
// shell and its background tasks, and the same walls enforced by troupe itself for the file
// tools, which write from troupe's own process. ARCHITECTURE.md says why bubblewrap.
//
// Inside, the file system is read-only except the writable roots (workspace-write: the
// workspace and --add-dir directories; read-only: none) and a private /tmp. The workspace's
// .git/hooks, .git/config, .troupe and .claude stay read-only, and so do troupe's home and settings
// wherever they are. Without --sandbox-network there is no network: a network namespace of its
// own, and a seccomp filter that refuses socket(2) with EPERM (socketpair stays).

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/expected.hpp"
#include "tools/sandbox_support.hpp"

namespace troupe {

enum class sandbox_mode : uint8_t { off, read_only, workspace_write };

/// Parses `off`, `read-only` or `workspace-write`.
std::optional<sandbox_mode> parse_sandbox_mode(std::string_view text);
const char* to_string(sandbox_mode mode);

/// What a run asked for: the flags over the settings files over the default.
struct sandbox_settings {
  sandbox_mode mode = sandbox_mode::off;
  /// The bwrap to run (the orchestrator finds it); "": none installed.
  std::string bwrap;
  bool network = false;
  /// Writable besides the workspace (--add-dir), absolute and real.
  std::vector<std::filesystem::path> add_dirs;
  /// Where the mode came from, for messages: "--sandbox", a settings file, "the default for …".
  std::string mode_source;
  /// Kept read-only even under a writable root: troupe's home and the user's settings
  /// directory (made when missing), a --settings file (hooks written there would run outside
  /// the sandbox).
  std::vector<std::filesystem::path> keep_read_only;
  /// Where the private /tmp directories are made (the system's temporary directory).
  std::filesystem::path temp_base = "/tmp";
};

/// The sandbox in a few words, for the bypass warning: "workspace-write, no network, 2 more
/// writable directories" or "off (settings file F)".
std::string summary(const sandbox_settings& settings);

/// Removes every sandbox's private /tmp still on disk: for an exit that runs no destructor
/// (exit_if_still_running_after), once the processes that used them are stopped.
void remove_sandbox_temps();

/// One session's walls. Shared (read-only) by its tools, its executor and its subagents; the
/// private temp directory is made on first use and removed with the last holder.
class sandbox_policy {
public:
  /// `workspace` and `add_dirs` must be absolute; they are resolved to where they really lead.
  sandbox_policy(const sandbox_settings& settings, const std::filesystem::path& workspace);
  ~sandbox_policy();
  sandbox_policy(const sandbox_policy&) = delete;
  sandbox_policy& operator=(const sandbox_policy&) = delete;

  sandbox_mode mode() const { return mode_; }
  bool network() const { return network_; }
  const std::vector<std::filesystem::path>& writable_roots() const { return writable_; }

  /// The host directory that is /tmp inside: made (owner-only) on first call.
  expected<std::filesystem::path> temp_dir() const;

  /// Rewrites `program` and `argv` (argv[0] included) to run inside the sandbox, in `cwd`.
  /// `pass_fd` is set to a descriptor (close-on-exec) the child must find as fd 3 (the
  /// seccomp program), -1 for none (an architecture troupe has no filter for); the caller
  /// closes it once the child has started.
  expected<bool> wrap(std::string& program, std::vector<std::string>& argv,
                      const std::filesystem::path& cwd, int& pass_fd) const;

  /// Why a write to `real` (where the path really leads) is refused, in the words of a tool
  /// error; empty when the sandbox allows it.
  std::string write_refusal(const std::filesystem::path& real) const;

  /// True when `real` (where a path really leads) is in the host's /tmp, which the sandbox
  /// hides behind its own: a link made inside may point there, where the shell cannot follow.
  bool hides(const std::filesystem::path& real) const;

  /// A path as the file tools must use it: /tmp/… (outside the writable roots) is the private
  /// temp directory, as the shell sees it.
  std::filesystem::path host_path(const std::filesystem::path& path) const;

  /// `text` (a file tool's result) with the private temp directory's host path written as the
  /// sandbox's /tmp, the name the model used and its shell knows.
  std::string inside_view(std::string text) const;

  /// Moves aside what a command created in a repository that points git elsewhere and cannot
  /// be kept read-only before it exists (`.git/commondir`, `.git/modules`, `.git/worktrees`:
  /// a bind needs something to bind, and an empty `commondir` breaks git), and a `.git` made
  /// at a root during the session whose config or hooks would run commands. Returns a line
  /// for the command's output saying what was moved; empty when nothing was.
  std::string move_planted() const;

  /// A line to add to a command's output that shows a sandbox refusal (a read-only file
  /// system, a network that is not there), saying what the walls are; empty for none.
  std::string note_for(std::string_view output) const;

private:
  bool under_writable(const std::filesystem::path& real) const;
  std::string walls() const;
  /// The private /tmp's host path once it is made (empty before), safe from any thread.
  std::filesystem::path made_temp() const;

  sandbox_mode mode_;
  std::string bwrap_;
  bool network_;
  std::filesystem::path workspace_;
  std::vector<std::filesystem::path> writable_;
  /// Kept read-only (bound over the writable roots), with why, and whether it is made (a
  /// directory) when missing so that it can be.
  struct kept {
    std::filesystem::path path;
    std::string why;
    bool make = false;
  };
  std::vector<kept> read_only_;
  /// Bound onto themselves so that they cannot be renamed away from what is bound in them.
  std::vector<std::filesystem::path> pinned_;
  /// Missing when the session started; moved aside when a command makes them.
  std::vector<std::filesystem::path> watched_;
  /// A root's `.git`, missing when the session started: a repository made during it is moved
  /// aside when its config or hooks would run commands (a `git init` alone is kept).
  std::vector<std::filesystem::path> new_repositories_;
  std::filesystem::path temp_base_;
  mutable std::once_flag temp_made_;
  mutable std::atomic<bool> temp_ready_{false};
  mutable std::filesystem::path temp_;
  mutable std::string temp_problem_;
};

} // namespace troupe
