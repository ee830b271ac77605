#pragma once
// Helpers shared by the test suites: temporary directories, child processes, scripts,
// a recording event subscriber and an actor system with troupe's types.

#include <chrono>
#include <functional>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "providers/scripted_script.hpp"
#include "protocol/events.hpp"
#include "protocol/interfaces.hpp"
#include "tools/tool_spec.hpp"

namespace caf {
class actor_system;
class actor_system_config;
} // namespace caf

namespace troupe::test {

/// A directory removed with everything in it when the object goes away.
class temp_dir {
public:
  temp_dir();
  ~temp_dir();
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

private:
  std::filesystem::path path_;
};

/// Writes text to a file, creating parent directories.
void write_file(const std::filesystem::path& path, const std::string& text);

/// Returns a file's whole content ("" when missing).
std::string read_file(const std::filesystem::path& path);

/// Reads a small JSON file the session rewrites in place (session.json, state.json), reading
/// again while a racing write leaves it torn; throws if it never parses within 2 s.
nlohmann::json read_json(const std::filesystem::path& path);

/// Returns the JSON objects of a JSONL file, one per non-empty line.
std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& path);

/// Splits text into lines (without their newlines).
std::vector<std::string> split_lines(const std::string& text);

/// Waits until the process is gone (or a zombie awaiting its parent); false after the limit.
bool wait_until_gone(int pid, std::chrono::milliseconds limit = std::chrono::seconds{2});

/// Polls `condition` every 10 ms until it holds (true) or `limit` passes (false).
bool wait_until(const std::function<bool()>& condition,
                std::chrono::milliseconds limit = std::chrono::seconds{5});

/// A full disk, as the files of this process see it, for as long as the object lives: no file
/// may grow past `bytes` (RLIMIT_FSIZE; SIGXFSZ ignored, so a write past it fails with EFBIG or
/// comes back short). Needs no root and no special mount.
class file_size_limit {
public:
  explicit file_size_limit(size_t bytes);
  ~file_size_limit();
  file_size_limit(const file_size_limit&) = delete;
  file_size_limit& operator=(const file_size_limit&) = delete;

private:
  unsigned long long saved_cur_ = 0;
  void (*saved_handler_)(int) = nullptr;
};

/// Returns the process's peak resident memory since the last reset_peak_rss(), in bytes.
size_t peak_rss();

/// Starts measuring the peak resident memory anew from now.
void reset_peak_rss();

/// A finished child process.
struct process_result {
  int exit_code = -1;
  std::string out;
  std::string err;
  /// The process's peak resident set (its VmHWM), from wait4's rusage.
  long max_rss_kib = 0;
};

/// Options for run_process.
struct process_options {
  std::string stdin_text;
  /// Variables to set (in addition to the inherited environment); an empty value unsets.
  std::map<std::string, std::string> env;
  /// Send `interrupt_signal` this long after start (0: never).
  std::chrono::milliseconds interrupt_after{0};
  /// Send `interrupt_signal` once stdout holds this text (empty: never).
  std::string interrupt_on_output;
  int interrupt_signal = 2; // SIGINT
  std::chrono::seconds timeout{60};
  /// Close our end of the child's stdout at once, as `| head -0` would.
  bool close_stdout = false;
  /// The child's working directory (default: the test's).
  std::filesystem::path cwd;
};

/// A tool context whose workspace is `dir` and whose home is `dir`/home.
tool_context context_in(const temp_dir& dir);

/// Starts `bash -c script` through spawn_child (tagged `owner`, with `environment` over the
/// inherited variables), stdin from /dev/null, stdout and stderr into `out`, in out's
/// directory. The caller reaps it with wait_child.
pid_t start_bash(const std::string& script, const std::filesystem::path& out,
                 const std::string& owner = "",
                 const std::map<std::string, std::string>& environment = {});

/// Runs argv to completion and captures its output. No TROUPE_*, OPENAI_* or ANTHROPIC_*
/// variable of the caller's environment reaches it (troupe runs with its shipped defaults)
/// unless `opts.env` sets it.
process_result run_process(const std::vector<std::string>& argv, const process_options& opts = {});

/// Runs the troupe binary under test with the given arguments.
process_result run_troupe(const std::vector<std::string>& args, const process_options& opts = {});

/// Returns a script built from JSON lines (fails the test when they do not parse).
script make_script(const std::vector<nlohmann::json>& lines);

/// Writes JSON lines to a file as a script.
void write_script(const std::filesystem::path& path, const std::vector<nlohmann::json>& lines);

/// This process's children whose command name is `name` (every thread's list in /proc).
std::set<long> children_named(const std::string& name);

/// Those of them not in `before`.
std::set<long> new_children_named(const std::string& name, const std::set<long>& before);

/// The same, once one has appeared (empty if none has within `limit`), looked at again after
/// `settle` so that a second one started meanwhile is counted too.
std::set<long> await_new_children_named(const std::string& name, const std::set<long>& before,
                                        std::chrono::milliseconds limit = std::chrono::seconds{3},
                                        std::chrono::milliseconds settle = {});

/// Everything a session published, collected by a recorder actor.
class recording {
public:
  void add(nlohmann::json event);
  void finish(session_ended_event ended);
  /// Waits until the session ended; fails the test after the timeout.
  session_ended_event wait_for_end(std::chrono::milliseconds timeout = std::chrono::seconds{30});
  /// Returns the events so far, each as its protocol JSON.
  std::vector<nlohmann::json> events();
  /// Returns the notices of the given kind so far.
  std::vector<nlohmann::json> notices(const std::string& kind);

private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<nlohmann::json> events_;
  std::optional<session_ended_event> ended_;
};

/// Spawns a subscriber that records every event it gets.
event_sink_actor spawn_recorder(caf::actor_system& sys, std::shared_ptr<recording> into);

/// An actor system configured with troupe's protocol types; it waits for its actors on exit.
class actor_system_fixture {
public:
  actor_system_fixture();
  ~actor_system_fixture();
  caf::actor_system& sys() { return *sys_; }

private:
  std::unique_ptr<caf::actor_system_config> cfg_;
  std::unique_ptr<caf::actor_system> sys_;
};

} // namespace troupe::test
