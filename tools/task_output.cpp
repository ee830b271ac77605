#include "tools/task_output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "tools/task_wait.hpp"

namespace troupe {

namespace {

// Up to `n` bytes from `at`.
std::string read_at(int fd, off_t at, size_t n) {
  std::string out(n, '\0');
  size_t done = 0;
  while (done < n) {
    auto r = ::pread(fd, out.data() + done, n - done, at + static_cast<off_t>(done));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    done += static_cast<size_t>(r);
  }
  out.resize(done);
  return out;
}

bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

} // namespace

std::string log_excerpt(const std::filesystem::path& log, size_t budget) {
  int fd = ::open(log.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return {};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size < 0) {
    ::close(fd);
    return {};
  }
  auto size = static_cast<size_t>(st.st_size);
  if (size <= budget) {
    auto whole = read_at(fd, 0, size);
    ::close(fd);
    return whole;
  }
  auto half = budget / 2;
  auto head = read_at(fd, 0, half);
  auto tail = read_at(fd, static_cast<off_t>(size - half), half);
  ::close(fd);
  // A character cut in two is left out whole, at either cut.
  size_t start = head.size();
  while (start > 0 && head.size() - start < 4 && continuation(head[start - 1]))
    --start;
  if (start > 0) {
    auto lead = static_cast<unsigned char>(head[start - 1]);
    size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (head.size() - (start - 1) < length)
      head.resize(start - 1);
  }
  size_t skip = 0;
  while (skip < tail.size() && skip < 4 && continuation(tail[skip]))
    ++skip;
  tail.erase(0, skip);
  return head + "\n[... " + std::to_string(size - head.size() - tail.size()) +
         " bytes of the log left out; " + std::to_string(size) + " bytes in all, in " +
         log.string() + " ...]\n" + tail;
}

// task_output and task_stop act on state the executor owns (the tasks it started), so they
// have no `run`: the executor carries them out. The specs are what the model and the
// permission check see.

tool_spec task_output_tool() {
  tool_spec spec;
  spec.name = "task_output";
  spec.description =
    "Read what a background task (shell with run_in_background) has printed, with its exit "
    "code once it ended, or a background agent's result (its agent id). By default it waits until the task ends or `timeout` seconds pass "
    "(default 30, max 600); block: false returns at once.";
  spec.input_schema = {
    {"type", "object"},
    {"properties",
     {{"task_id", {{"type", "string"}, {"description", "the id shell or task returned"}}},
      {"block", {{"type", "boolean"}, {"description", "wait for the task to end (default true)"}}},
      {"timeout",
       {{"type", "number"},
        {"minimum", 0},
        {"maximum", max_task_wait_seconds},
        {"description", "most seconds to wait (default 30, at most 600)"}}}}},
    {"required", {"task_id"}}};
  spec.read_only = true;
  spec.kind = tool_kind::task;
  return spec;
}

} // namespace troupe
