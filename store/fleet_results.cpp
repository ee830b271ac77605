#include "store/fleet_results.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string_view>

#include <cerrno>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "protocol/bounded_json.hpp"

namespace troupe {

expected<fleet_results_writer> fleet_results_writer::open(const std::filesystem::path& path,
                                                           std::string* cut) {
  if (path.has_parent_path())
    if (auto problem = make_private_dirs(path.parent_path()); !problem.empty())
      return failure{problem};
  int fd = open_private(path, O_RDWR | O_APPEND);
  if (fd < 0)
    return failure{"cannot open the results file " + path.string() + ": " + std::strerror(errno)};
  fleet_results_writer writer;
  writer.fd_ = file_handle{fd};
  writer.path_ = path;
  // One writer per file, whichever fleet: two would write each id twice. An open-file-description
  // lock, let go when the writer closes (or the process dies).
  struct flock whole{};
  whole.l_type = F_WRLCK;
  whole.l_whence = SEEK_SET;
  if (::fcntl(fd, F_OFD_SETLK, &whole) != 0)
    return failure{"the results file " + path.string() +
                   " is being written by another fleet; give this one another --out"};
  if (!ends_with_newline(fd)) {
    struct stat st{};
    if (::fstat(fd, &st) != 0)
      return failure{"cannot read " + path.string() + ": " + std::strerror(errno)};
    // Back to just after the last newline (or the start): the torn line's bytes are read
    // backwards in blocks, never the whole file.
    off_t end = st.st_size;
    std::string tail;
    char block[4096];
    off_t keep = 0;
    for (off_t at = end; at > 0;) {
      auto size = static_cast<size_t>(std::min<off_t>(at, sizeof block));
      at -= static_cast<off_t>(size);
      if (::pread(fd, block, size, at) != static_cast<ssize_t>(size))
        return failure{"cannot read " + path.string() + ": " + std::strerror(errno)};
      auto text = std::string_view{block, size};
      auto newline = text.rfind('\n');
      if (newline != std::string_view::npos) {
        keep = at + static_cast<off_t>(newline) + 1;
        tail.insert(0, text.substr(newline + 1));
        break;
      }
      tail.insert(0, text);
    }
    if (::ftruncate(fd, keep) != 0)
      return failure{"cannot cut the torn last line of " + path.string() + ": " +
                     std::strerror(errno)};
    if (cut)
      *cut = std::move(tail);
  }
  return writer;
}

expected<bool> fleet_results_writer::append(const std::string& line) {
  if (auto problem = append_or_take_back(fd_.get(), line + "\n", path_); !problem.empty())
    return failure{problem};
  return true;
}

expected<fleet_results> read_fleet_results(const std::filesystem::path& path) {
  fleet_results results;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return results;
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return failure{"cannot read the results file " + path.string() + ": " +
                   std::strerror(errno)};
  std::string line;
  int64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    // The last line without its newline is one a kill cut short, even when it parses.
    if (in.eof()) {
      results.skipped.push_back("line " + std::to_string(number) + ": cut short");
      break;
    }
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    auto parsed = parse_json_bounded(line, max_record_depth);
    if (!parsed || !parsed->is_object() || !parsed->contains("id") ||
        !(*parsed)["id"].is_string()) {
      results.skipped.push_back("line " + std::to_string(number) + ": not a result");
      continue;
    }
    auto& object = *parsed;
    fleet_result result;
    result.id = object["id"].get<std::string>();
    if (auto reason = object.find("terminal_reason");
        reason != object.end() && reason->is_string())
      result.terminal_reason = reason->get<std::string>();
    if (auto error = object.find("error"); error != object.end() && error->is_string())
      result.error = error->get<std::string>();
    // A later "budget" line never hides a result (two fleets sharing one file, say).
    auto [at, fresh] = results.by_id.try_emplace(result.id, result);
    if (!fresh && !(result.error == "budget" && at->second.error != "budget"))
      at->second = std::move(result);
  }
  return results;
}

fleet_counts count_fleet_results(const fleet_results& results) {
  fleet_counts counts;
  for (auto& [id, result] : results.by_id) {
    if (result.error == "budget")
      ++counts.budget;
    else if (result.error.empty() && result.terminal_reason == "completed")
      ++counts.completed;
    else
      ++counts.failed;
    ++counts.by_reason[!result.terminal_reason.empty()      ? result.terminal_reason
                       : result.error == "budget"                 ? std::string{"budget"}
                       : result.error.rfind("invalid task", 0) == 0 ? std::string{"invalid task"}
                                                                  : std::string{"not started"}];
  }
  return counts;
}

} // namespace troupe
