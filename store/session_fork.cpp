#include "store/session_fork.hpp"

#include <string>

#include <nlohmann/json.hpp>

#include "protocol/private_files.hpp"

namespace troupe {

namespace {

// Replaces every occurrence of `from` in `text` with `to`.
void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

// Copies a transcript's whole lines (the source may be running: a line being written is not
// copied), with paths into the source session's directory pointed at the copy's.
std::string copy_transcript(const std::filesystem::path& from, const std::filesystem::path& to,
                            const std::string& old_dir, const std::string& new_dir) {
  std::string text;
  if (!read_whole_file(from, text).empty())
    return "cannot read " + from.string();
  text.erase(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
  replace_all(text, old_dir, new_dir);
  if (auto problem = write_private_file(to, text); !problem.empty())
    return problem;
  return {};
}

// A directory as it appears inside JSON strings, with the separator after it so that a session
// whose id extends the source's is left alone.
std::string json_path(const std::filesystem::path& p) {
  auto quoted = nlohmann::json(p.string() + "/").dump(
    -1, ' ', false, nlohmann::json::error_handler_t::replace); // as the transcript has it
  return quoted.substr(1, quoted.size() - 2);
}

} // namespace

expected<session_paths> fork_session(const stored_session& from, const session_paths& to) {
  std::error_code ec;
  if (std::filesystem::exists(to.transcript(), ec))
    return failure{"cannot fork into " + to.id() + ": that session exists already"};
  if (auto problem = make_private_dirs(to.dir()); !problem.empty())
    return failure{problem};
  const auto& source = from.paths;
  auto old_dir = json_path(source.dir());
  auto new_dir = json_path(to.dir());
  auto fail = [&](const std::string& problem) -> expected<session_paths> {
    std::error_code undo_ec;
    for (auto& entry : std::filesystem::directory_iterator(to.dir(), undo_ec))
      if (entry.path() != to.lock())
        std::filesystem::remove_all(entry.path(), undo_ec);
    return failure{problem};
  };
  for (auto it = std::filesystem::recursive_directory_iterator(source.dir(), ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    auto relative = it->path().lexically_relative(source.dir());
    auto target = to.dir() / relative;
    std::error_code entry_ec;
    auto kind = it->symlink_status(entry_ec).type();
    if (kind == std::filesystem::file_type::directory) {
      if (auto problem = make_private_dirs(target); !problem.empty())
        return fail(problem);
      continue;
    }
    // In the session's own directory and each subagent's (agents/X/queue.jsonl …), not in
    // tool-results/ or tasks/, whose files are whatever the tools named them.
    session_paths owner{it->path().parent_path()};
    auto below = owner.dir().lexically_relative(source.dir()).generic_string();
    bool in_session_dir = below == "." || first_agent_of(below);
    if ((in_session_dir && owner.belongs_to_original(it->path().filename())) ||
        it->path() == source.info())
      continue;
    std::string problem;
    if (kind == std::filesystem::file_type::symlink) {
      std::filesystem::copy_symlink(it->path(), target, entry_ec); // a link stays a link
    } else if (kind != std::filesystem::file_type::regular) {
      continue; // a pipe or a socket: nothing to copy
    } else if (it->path() == owner.transcript()) {
      problem = copy_transcript(it->path(), target, old_dir, new_dir);
    } else {
      std::filesystem::copy_file(it->path(), target,
                                 std::filesystem::copy_options::overwrite_existing, entry_ec);
      // copy_file gives the copy the original's mode: the copy is private whatever that was.
      if (!entry_ec)
        std::filesystem::permissions(target, std::filesystem::perms::owner_read |
                                               std::filesystem::perms::owner_write,
                                     entry_ec);
    }
    if (entry_ec)
      problem = "cannot copy " + it->path().string() + ": " + entry_ec.message();
    if (!problem.empty())
      return fail(problem);
  }
  if (ec)
    return fail("cannot copy " + source.dir().string() + ": " + ec.message());
  return to;
}

} // namespace troupe
