#pragma once
// The files a project keeps for its agents, read at start-up: its instructions (CLAUDE.md,
// AGENTS.md, CLAUDE.local.md in the workspace and each directory above it up to the
// repository's root, and the user's own under troupe's config directory), and how any of its
// files is read (a regular file, capped, never one whose real place is outside the project).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "protocol/expected.hpp"

namespace troupe {

/// The first bytes of a file.
struct capped_file {
  std::string text;
  /// The file's whole size.
  uint64_t size = 0;
  /// Only the first `cap` bytes were read (cut at a character's start).
  bool cut = false;
};

/// Reads at most `cap` bytes of a regular file, links followed; never waits on a FIFO or a
/// device. An error says why not (not a regular file, no permission, …).
expected<capped_file> read_capped_file(const std::filesystem::path& path, size_t cap);

/// Where the project's files are looked for, upward from `workspace`: the nearest directory
/// holding `.git`; without one, `home` when the workspace is inside it, else "/".
std::filesystem::path project_root(const std::filesystem::path& workspace,
                                   const std::filesystem::path& home);

/// An error when `path` really leads outside `root` (a link out of the project: a cloned
/// repository must not make troupe read ~/.ssh into a prompt); empty when it is inside.
std::string outside_project(const std::filesystem::path& path, const std::filesystem::path& root);

/// How much of the instruction files goes into the system prompt.
struct instruction_limits {
  /// Of one file (an import included).
  size_t per_file = 64 * 1024;
  /// Of all of them.
  size_t total = 256 * 1024;
};

/// The instructions of a workspace, as the system prompt carries them.
struct project_instructions {
  /// The prompt's section (a heading per file); empty when there is none.
  std::string text;
  /// Every file read into it, in order (imports included).
  std::vector<std::string> files;
  /// What could not be read, and what was cut: one line each, for the log.
  std::vector<std::string> warnings;
};

/// Reads the instruction files of `workspace`: the user's (`user_dir`/CLAUDE.md, then
/// AGENTS.md), then from the project's root (project_root) down to the workspace, in each
/// directory CLAUDE.md, .claude/CLAUDE.md, AGENTS.md and CLAUDE.local.md. A line that is only
/// `@relative/path` imports that file in its place (one level deep; outside code fences). A file
/// met twice (AGENTS.md a link to CLAUDE.md) is read once; one that cannot be read is a warning.
project_instructions read_project_instructions(const std::filesystem::path& workspace,
                                               const std::filesystem::path& user_dir,
                                               const std::filesystem::path& home,
                                               instruction_limits limits = {});

} // namespace troupe
