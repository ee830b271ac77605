#include "actors/transcript.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "protocol/bounded_json.hpp"

namespace troupe {

namespace {

expected<bool> write_all(int fd, const std::string& data, const std::filesystem::path& path) {
  size_t done = 0;
  while (done < data.size()) {
    auto n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return failure{"cannot write " + path.string() + ": " + std::strerror(errno)};
    done += static_cast<size_t>(n);
  }
  return true;
}

} // namespace

file_handle& file_handle::operator=(file_handle&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

file_handle::~file_handle() {
  if (fd_ >= 0)
    ::close(fd_);
}

expected<transcript_writer> transcript_writer::open(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec)
    return failure{"cannot create " + path.parent_path().string() + ": " + ec.message()};
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0)
    return failure{"cannot open transcript " + path.string() + ": " + std::strerror(errno)};
  transcript_writer writer;
  writer.fd_ = file_handle{fd};
  writer.path_ = path;
  return writer;
}

expected<bool> transcript_writer::append(const message& msg) {
  if (!fd_)
    return failure{"transcript is not open"};
  auto line = nlohmann::json(msg).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  line.push_back('\n');
  return write_all(fd_.get(), line, path_);
}

void transcript_writer::sync() {
  if (fd_)
    ::fsync(fd_.get());
}

int transcript_writer::duplicate_descriptor() const {
  return fd_ ? ::fcntl(fd_.get(), F_DUPFD_CLOEXEC, 0) : -1;
}

expected<loaded_transcript> load_transcript(const std::filesystem::path& path,
                                            transcript_access access) {
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return failure{"cannot read transcript " + path.string()};
  std::stringstream buffer;
  buffer << in.rdbuf();
  auto text = buffer.str();

  loaded_transcript result;
  size_t pos = 0;
  size_t line_number = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    auto line = text.substr(pos, (end == std::string::npos ? text.size() : end) - pos);
    ++line_number;
    bool whole = end != std::string::npos;
    if (!line.empty()) {
      auto parsed = parse_json_bounded(line, max_record_depth);
      message msg;
      bool ok = static_cast<bool>(parsed);
      if (ok) {
        try {
          parsed->get_to(msg);
        } catch (const nlohmann::json::exception&) {
          ok = false;
        }
      }
      if (!ok && !whole && access == transcript_access::reader)
        break; // half a line its writer is still writing (or died writing): not read
      if (!ok && !whole) {
        // A crash mid-append leaves a partial last line: keep its bytes aside, cut it off.
        std::ofstream torn{path.string() + ".torn", std::ios::binary | std::ios::app};
        torn << line << '\n';
        std::error_code ec;
        std::filesystem::resize_file(path, pos, ec);
        if (ec)
          return failure{"cannot repair " + path.string() + ": " + ec.message()};
        result.repair_note = "transcript " + path.string() + ": torn last line " +
                             std::to_string(line_number) + " moved to " + path.string() +
                             ".torn";
        break;
      }
      if (!ok)
        return failure{"transcript " + path.string() + " line " + std::to_string(line_number) +
                       " is not a valid message; fix or remove that line"};
      result.messages.push_back(std::move(msg));
    }
    if (!whole) {
      // A valid last line without its newline: its owner completes it so the next append
      // starts clean.
      if (access == transcript_access::owner) {
        std::ofstream out{path, std::ios::binary | std::ios::app};
        out << '\n';
      }
      break;
    }
    pos = end + 1;
  }
  return result;
}

expected<json_file> json_file::open(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    return failure{"cannot open " + path.string() + ": " + std::strerror(errno)};
  json_file file;
  file.fd_ = file_handle{fd};
  file.size_ = std::filesystem::file_size(path, ec);
  file.path_ = path;
  return file;
}

expected<bool> json_file::write(const nlohmann::json& value) {
  if (!fd_)
    return failure{path_.string() + " is not open"};
  auto text = value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  // Padding to the old size (JSON allows trailing whitespace) keeps it one write: no
  // truncate, so no moment at which the file holds a mix of two states.
  if (text.size() < size_)
    text.append(size_ - text.size(), ' ');
  auto n = ::pwrite(fd_.get(), text.data(), text.size(), 0);
  if (n != static_cast<ssize_t>(text.size()))
    return failure{"cannot write " + path_.string() + ": " + std::strerror(errno)};
  size_ = text.size();
  return true;
}

expected<loop_state> read_loop_state(const std::filesystem::path& path) {
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return failure{"cannot read " + path.string()};
  std::stringstream buffer;
  buffer << in.rdbuf();
  auto parsed = parse_json_bounded(buffer.str(), max_record_depth);
  if (!parsed)
    return failure{path.string() + " is not valid JSON"};
  try {
    return parsed->get<loop_state>();
  } catch (const nlohmann::json::exception& e) {
    return failure{path.string() + " is not a loop state: " + e.what()};
  }
}

} // namespace troupe
