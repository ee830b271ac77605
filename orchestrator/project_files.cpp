#include "orchestrator/project_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <set>

#include "tools/tool_spec.hpp"

namespace troupe {

namespace {

class descriptor {
public:
  explicit descriptor(int fd) : fd_(fd) {}
  descriptor(const descriptor&) = delete;
  descriptor& operator=(const descriptor&) = delete;
  ~descriptor() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  int get() const { return fd_; }

private:
  int fd_;
};

std::filesystem::path real_or_same(const std::filesystem::path& path) {
  std::error_code ec;
  auto real = std::filesystem::canonical(path, ec);
  return ec ? path.lexically_normal() : real;
}

bool is_within(const std::filesystem::path& path, const std::filesystem::path& root) {
  auto p = path.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++p) {
    if (r->empty())
      continue; // a trailing separator
    if (p == path.end() || *p != *r)
      return false;
  }
  return true;
}

std::string trim_copy(const std::string& text) {
  auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos)
    return {};
  auto last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

// Reads the instruction files into one section, within the limits.
class instruction_reader {
public:
  instruction_reader(instruction_limits limits, project_instructions& out)
    : limits_(limits), out_(out) {}

  /// Adds `file` when it exists; `root` (null for the user's own files) is where it and its
  /// imports must really be.
  void add(const std::filesystem::path& file, const std::filesystem::path* root) {
    std::error_code ec;
    auto link = std::filesystem::symlink_status(file, ec);
    if (ec || !std::filesystem::exists(link))
      return;
    if (!std::filesystem::exists(file, ec)) {
      warn(file.string() + ": not read: a link to nothing");
      return;
    }
    auto text = read(file, root);
    if (!text)
      return;
    auto expanded = imports(*text, file, root);
    sections_.push_back("## " + file.string() + "\n\n" + expanded);
  }

  /// The section: a heading, a word on precedence, then each file under its path.
  std::string text() const {
    if (sections_.empty())
      return {};
    std::string text =
      "# Project instructions\n\n"
      "The user and this project keep instructions for agents in the files below (CLAUDE.md, "
      "AGENTS.md), each under its path; follow them. A later file is closer to the workspace "
      "and takes precedence where they disagree.";
    for (auto& section : sections_) {
      text += "\n\n" + section;
      while (!text.empty() && text.back() == '\n')
        text.pop_back();
    }
    return text;
  }

private:
  void warn(std::string line) { out_.warnings.push_back(std::move(line)); }

  // A file's text within the limits (with a note where it was cut), or nothing.
  std::optional<std::string> read(const std::filesystem::path& file,
                                  const std::filesystem::path* root) {
    if (root != nullptr)
      if (auto outside = outside_project(file, *root); !outside.empty()) {
        warn(file.string() + ": not read: " + outside);
        return std::nullopt;
      }
    auto real = real_or_same(file).string();
    if (!seen_.insert(real).second)
      return std::nullopt; // AGENTS.md linked to CLAUDE.md: read once
    if (used_ >= limits_.total) {
      warn(file.string() + ": not read: the instruction files passed " +
           std::to_string(limits_.total) + " bytes in all");
      return std::nullopt;
    }
    auto room = std::min(limits_.per_file, limits_.total - used_);
    auto read = read_capped_file(file, room);
    if (!read) {
      warn(file.string() + ": not read: " + read.error());
      return std::nullopt;
    }
    auto text = std::move(read->text);
    used_ += text.size();
    out_.files.push_back(file.string());
    if (read->cut) {
      bool whole_cap = room == limits_.per_file;
      auto note = whole_cap ? file.string() + " is " + std::to_string(read->size) +
                                " bytes; only its first " + std::to_string(text.size()) +
                                " are read"
                            : "the instruction files passed " + std::to_string(limits_.total) +
                                " bytes in all; the rest of " + file.string() +
                                " and the files after it are not read";
      warn(note);
      text += "\n\n[troupe: cut here: " + note + "]";
    }
    return text;
  }

  // Replaces each line that is only `@relative/path` (outside code fences) by that file's text.
  std::string imports(const std::string& text, const std::filesystem::path& file,
                      const std::filesystem::path* root) {
    std::string out;
    bool fenced = false;
    size_t start = 0;
    while (start < text.size()) {
      auto end = text.find('\n', start);
      auto line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
      start = end == std::string::npos ? text.size() : end + 1;
      auto trimmed = trim_copy(line);
      if (trimmed.rfind("```", 0) == 0 || trimmed.rfind("~~~", 0) == 0)
        fenced = !fenced;
      auto imported = fenced ? std::nullopt : import(trimmed, file, root);
      out += imported ? *imported : line;
      if (end != std::string::npos)
        out += '\n';
    }
    return out;
  }

  std::optional<std::string> import(const std::string& line, const std::filesystem::path& file,
                                    const std::filesystem::path* root) {
    if (line.size() < 2 || line[0] != '@' || line.find_first_of(" \t") != std::string::npos)
      return std::nullopt;
    auto target = line.substr(1);
    if (target[0] == '/' || target[0] == '~') {
      warn(file.string() + ": " + line + " not imported: only paths relative to the file are");
      return std::nullopt;
    }
    auto path = (file.parent_path() / target).lexically_normal();
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      return std::nullopt; // a mention, not an import (`@someone`)
    auto text = read(path, root);
    if (!text)
      return std::nullopt;
    return *text;
  }

  instruction_limits limits_;
  project_instructions& out_;
  std::set<std::string> seen_;
  std::vector<std::string> sections_;
  size_t used_ = 0;
};

} // namespace

expected<capped_file> read_capped_file(const std::filesystem::path& path, size_t cap) {
  // Not blocking on a FIFO (a CLAUDE.md that is one would hang the start for ever).
  descriptor fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)};
  if (fd.get() < 0)
    return failure{std::strerror(errno)};
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0)
    return failure{std::strerror(errno)};
  if (!S_ISREG(info.st_mode))
    return failure{"not a regular file"};
  capped_file file;
  file.size = static_cast<uint64_t>(info.st_size);
  // One byte past the cap says whether there is more (a file's size may change meanwhile).
  file.text.resize(cap + 1);
  size_t got = 0;
  while (got < file.text.size()) {
    auto n = ::read(fd.get(), file.text.data() + got, file.text.size() - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return failure{std::strerror(errno)};
    if (n == 0)
      break;
    got += static_cast<size_t>(n);
  }
  file.text.resize(got);
  if (got > cap) {
    file.cut = true;
    file.text.resize(char_boundary(file.text, cap));
    file.size = std::max<uint64_t>(file.size, got);
  }
  return file;
}

std::filesystem::path project_root(const std::filesystem::path& workspace,
                                   const std::filesystem::path& home) {
  auto home_real = real_or_same(home);
  auto dir = real_or_same(workspace);
  for (;;) {
    std::error_code ec;
    if (std::filesystem::exists(dir / ".git", ec) || dir == home_real ||
        dir == dir.parent_path())
      return dir;
    dir = dir.parent_path();
  }
}

std::string outside_project(const std::filesystem::path& path, const std::filesystem::path& root) {
  auto real = real_or_same(path);
  auto real_root = real_or_same(root);
  if (is_within(real, real_root))
    return {};
  return "it leads to " + real.string() + ", outside the project (" + real_root.string() + ")";
}

project_instructions read_project_instructions(const std::filesystem::path& workspace,
                                               const std::filesystem::path& user_dir,
                                               const std::filesystem::path& home,
                                               instruction_limits limits) {
  project_instructions out;
  instruction_reader reader{limits, out};
  for (auto name : {"CLAUDE.md", "AGENTS.md"})
    reader.add(user_dir / name, nullptr);
  auto root = project_root(workspace, home);
  // From the root down to the workspace: the closer a file, the later it comes.
  std::vector<std::filesystem::path> dirs;
  for (auto dir = real_or_same(workspace);; dir = dir.parent_path()) {
    dirs.push_back(dir);
    if (dir == root || dir == dir.parent_path())
      break;
  }
  std::reverse(dirs.begin(), dirs.end());
  for (auto& dir : dirs)
    for (auto name : {"CLAUDE.md", ".claude/CLAUDE.md", "AGENTS.md", "CLAUDE.local.md"})
      reader.add(dir / name, &root);
  out.text = reader.text();
  return out;
}

} // namespace troupe
