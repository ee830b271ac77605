#include "store/fleet_results.hpp"

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "protocol/bounded_json.hpp"

namespace troupe {

expected<fleet_results_writer> fleet_results_writer::open(const std::filesystem::path& path) {
  if (path.has_parent_path())
    if (auto problem = make_private_dirs(path.parent_path()); !problem.empty())
      return failure{problem};
  int fd = open_private(path, O_RDWR | O_APPEND);
  if (fd < 0)
    return failure{"cannot open the results file " + path.string() + ": " + std::strerror(errno)};
  fleet_results_writer writer;
  writer.fd_ = file_handle{fd};
  writer.path_ = path;
  writer.end_torn_line_ = !ends_with_newline(fd);
  return writer;
}

expected<bool> fleet_results_writer::append(const std::string& line) {
  auto data = (end_torn_line_ ? "\n" : "") + line + "\n";
  if (auto problem = append_or_take_back(fd_.get(), data, path_); !problem.empty())
    return failure{problem};
  end_torn_line_ = false;
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
    results.by_id.emplace(result.id, std::move(result));
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
