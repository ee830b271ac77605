#include "store/state_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "protocol/bounded_json.hpp"

namespace troupe {

namespace {

// Reads the object written by a json_file at `path` as a T; the error says it is not `what`.
template <class T>
expected<T> read_json_as(const std::filesystem::path& path, const char* what, int tries) {
  auto json = read_json_object(path, tries);
  if (!json)
    return failure{json.error()};
  try {
    return json->get<T>();
  } catch (const nlohmann::json::exception& e) {
    return failure{path.string() + " is not " + what + ": " + e.what()};
  }
}

} // namespace

expected<json_file> json_file::open(const std::filesystem::path& path, bool keep_open) {
  if (auto problem = make_private_dirs(path.parent_path()); !problem.empty())
    return failure{problem};
  int fd = open_private(path, O_WRONLY);
  if (fd < 0)
    return failure{"cannot open " + path.string() + ": " + std::strerror(errno)};
  std::error_code ec;
  json_file file;
  file.fd_ = file_handle{fd};
  file.size_ = std::filesystem::file_size(path, ec);
  file.path_ = path;
  file.keep_open_ = keep_open;
  if (!keep_open)
    file.fd_ = file_handle{};
  return file;
}

expected<bool> json_file::write(const nlohmann::json& value) {
  if (path_.empty())
    return failure{"no file to write"};
  if (!fd_) {
    // Made 0600 by open(); a reopen only opens (no chmod per write), unless it is gone.
    int fd = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
      fd = open_private(path_, O_WRONLY);
    if (fd < 0)
      return failure{"cannot open " + path_.string() + ": " + std::strerror(errno)};
    fd_ = file_handle{fd};
  }
  struct close_after {
    json_file& file;
    ~close_after() {
      if (!file.keep_open_)
        file.fd_ = file_handle{};
    }
  } closing{*this};
  auto text = value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  // Padding to the old size (JSON allows trailing whitespace) keeps it one write: no
  // truncate, so no moment at which the file holds a mix of two states.
  if (text.size() < size_)
    text.append(size_ - text.size(), ' ');
  errno = 0;
  auto n = ::pwrite(fd_.get(), text.data(), text.size(), 0);
  if (n != static_cast<ssize_t>(text.size()))
    return failure{"cannot write " + path_.string() + ": " +
                   (n < 0 && errno != 0 ? std::string{std::strerror(errno)}
                                        : "short write: " + std::to_string(n < 0 ? 0 : n) +
                                            " of " + std::to_string(text.size()) + " bytes")};
  size_ = text.size();
  return true;
}

expected<nlohmann::json> read_json_object(const std::filesystem::path& path, int tries) {
  // A live session rewrites the file in place (json_file): a read that races the write can
  // come back torn, and reading again a moment later gets the whole file.
  std::string problem;
  for (int attempt = 0; attempt < std::max(tries, 1); ++attempt) {
    if (attempt > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds{1});
    std::string text;
    if (problem = read_whole_file(path, text); !problem.empty())
      return failure{problem};
    auto parsed = parse_json_bounded(text, max_record_depth);
    if (!parsed) {
      problem = path.string() + " is not valid JSON";
      continue;
    }
    if (!parsed->is_object())
      return failure{path.string() + " is not a JSON object"};
    return std::move(*parsed);
  }
  return failure{problem};
}

expected<loop_state> read_loop_state(const std::filesystem::path& path, int tries) {
  return read_json_as<loop_state>(path, "a loop state", tries);
}

expected<session_info> read_session_info(const std::filesystem::path& path, int tries) {
  return read_json_as<session_info>(path, "a session's", tries);
}

} // namespace troupe
