#include "store/transcript.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "protocol/bounded_json.hpp"
#include "protocol/private_files.hpp"
#include "store/session_paths.hpp"

namespace troupe {

bool json_line_cut_short(const std::string& line) {
  if (line.empty() || line.front() != '{')
    return false;
  try {
    auto parsed = nlohmann::json::parse(line);
    return parsed.is_discarded(); // never: parse throws on bad input
  } catch (const nlohmann::json::parse_error& e) {
    return e.byte > line.size();
  } catch (const nlohmann::json::exception&) {
    return false; // whole but bad, such as a number past a double's range (1e999)
  }
}

namespace {

// Saves a torn line in `torn` (appended, 0600, synced), every byte checked; on any failure the
// file is cut back to what it was and the error returned.
std::string save_torn(const std::filesystem::path& torn, const std::string& line) {
  file_handle fd{open_private(torn, O_WRONLY | O_APPEND)};
  if (!fd)
    return "cannot open " + torn.string() + ": " + std::strerror(errno);
  struct stat before{};
  if (::fstat(fd.get(), &before) != 0)
    return "cannot read " + torn.string() + ": " + std::strerror(errno);
  auto problem = write_fully(fd.get(), line.data(), line.size(), torn);
  if (problem.empty())
    problem = write_fully(fd.get(), "\n", 1, torn);
  if (problem.empty() && ::fsync(fd.get()) != 0)
    problem = "cannot sync " + torn.string() + ": " + std::strerror(errno);
  if (!problem.empty()) {
    (void)::ftruncate(fd.get(), before.st_size);
    // An empty file made here would look like a saved line: none is left behind.
    if (before.st_size == 0) {
      std::error_code ec;
      std::filesystem::remove(torn, ec);
    }
  }
  return problem;
}

} // namespace

expected<transcript_writer> transcript_writer::open(const std::filesystem::path& path) {
  if (auto problem = make_private_dirs(path.parent_path()); !problem.empty())
    return failure{problem};
  int fd = open_private(path, O_RDWR | O_APPEND);
  if (fd < 0)
    return failure{"cannot open transcript " + path.string() + ": " + std::strerror(errno)};
  transcript_writer writer;
  writer.fd_ = file_handle{fd};
  writer.path_ = path;
  // A torn line left in place (it could not be saved aside) is ended before the first append,
  // so the new line stays a line of its own.
  writer.end_torn_line_ = !ends_with_newline(fd);
  return writer;
}

expected<bool> transcript_writer::append(const message& msg) {
  if (!fd_)
    return failure{"transcript is not open"};
  auto line = nlohmann::json(msg).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  line.push_back('\n');
  if (end_torn_line_)
    line.insert(0, "\n");
  if (auto problem = append_or_take_back(fd_.get(), line, path_); !problem.empty())
    return failure{problem};
  end_torn_line_ = false;
  return true;
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
  // Read line by line: memory holds the messages and one line, never the file twice over.
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return failure{"cannot read transcript " + path.string()};
  loaded_transcript result;
  auto note = [&](const std::string& text) {
    result.repair_note += (result.repair_note.empty() ? "" : "; ") + text;
  };
  std::string line;
  size_t pos = 0;
  size_t line_number = 0;
  auto torn_path = torn_lines_path(path);
  while (std::getline(in, line)) {
    ++line_number;
    bool whole = !in.eof();
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
        // A crash mid-append leaves a partial last line: its bytes are saved aside, and only
        // once every one of them is on disk there is it cut off. Otherwise it stays where it
        // is: the next append ends it first, and reads skip it (below).
        auto where = "transcript " + path.string() + ": torn last line " +
                     std::to_string(line_number) + " (" + std::to_string(line.size()) +
                     " bytes)";
        if (auto problem = save_torn(torn_path, line); !problem.empty()) {
          note(where + " could not be saved aside (" + problem +
               "); it is left in place and skipped");
          break;
        }
        file_handle cut{::open(path.c_str(), O_WRONLY | O_CLOEXEC)};
        if (!cut || ::ftruncate(cut.get(), static_cast<off_t>(pos)) != 0) {
          note(where + " copied to " + torn_path.string() + " but could not be cut off (" +
               std::strerror(errno) + "); it is left in place and skipped");
          break;
        }
        note(where + " moved to " + torn_path.string());
        break;
      }
      if (!ok && json_line_cut_short(line)) {
        // A torn line that could not be moved aside when it was found: kept, not read.
        note("transcript " + path.string() + ": line " + std::to_string(line_number) +
             " is a torn line kept in place; skipped");
      } else if (!ok) {
        return failure{"transcript " + path.string() + " line " + std::to_string(line_number) +
                       " is not a valid message; fix or remove that line"};
      } else {
        result.messages.push_back(std::move(msg));
      }
    }
    if (!whole) {
      // A valid last line without its newline: its owner completes it so the next append
      // starts clean.
      if (access == transcript_access::owner) {
        file_handle out{::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC)};
        if (out)
          (void)write_fully(out.get(), "\n", 1, path);
      }
      break;
    }
    pos += line.size() + 1;
  }
  return result;
}

std::optional<first_prompt> read_first_prompt(const std::filesystem::path& path,
                                             size_t max_bytes) {
  std::ifstream in{path, std::ios::binary};
  std::string line;
  while (std::getline(in, line)) {
    auto parsed = parse_json_bounded(line, max_record_depth);
    auto m = parsed ? std::move(*parsed) : nlohmann::json{};
    if (m.is_object() && m.value("role", "") == "user" && m.value("origin", "") == "prompt")
      return first_prompt{m.value("content", std::string{}).substr(0, max_bytes),
                          m.value("timestamp_ms", int64_t{0})};
  }
  return std::nullopt;
}

} // namespace troupe
