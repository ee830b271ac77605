#pragma once
// The contract every tool file fulfils: a spec the prompt, the parser and the executor share.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/message.hpp"
#include "protocol/model.hpp"

namespace troupe {

/// Bytes of a tool result the model sees unless --max-tool-output or $TROUPE_MAX_TOOL_OUTPUT
/// says otherwise.
inline constexpr size_t default_output_cap = 30000;

class sandbox_policy;
class shell_ahead;

/// What a tool may know about the session it runs for.
struct tool_context {
  /// The workspace; relative paths resolve against it and shells start in it.
  std::filesystem::path cwd;
  /// The user's home, for paths written as ~/…
  std::filesystem::path home;
  /// Most bytes of a tool result the model sees: past it the head and tail are kept, with a
  /// note saying how much was cut and where the whole output was saved.
  size_t output_cap = default_output_cap;
  /// Most bytes of a command's output kept at all (the saved file holds its head and tail).
  size_t capture_cap = 10 * 1024 * 1024;
  /// Where whole outputs over output_cap are saved, one file per call; empty: not saved.
  std::filesystem::path results_dir;
  /// Where background tasks write their output; empty: a temporary directory.
  std::filesystem::path tasks_dir;
  /// The session's durable queue: a background task still running when the session ends is
  /// stopped and reported there, so a resumed session hears of it. Empty: not reported.
  std::filesystem::path notification_queue;
  /// The bash the shell tool runs, as an absolute path: searching PATH on every call costs a
  /// failed execve per PATH entry.
  /// A shell idle this long is stopped (its processes with it); the next command starts a new
  /// one, and says so. 0: kept until the session ends. Fleets set it: ten thousand idle bash
  /// processes would not fit.
  std::chrono::milliseconds shell_idle_stop{0};
  /// Start the shell (and its reader) ahead of the first command, when the step asks with the
  /// session's first model request (start_atom), so that the first command finds it running.
  /// The top-level agent of a run or a chat only: a subagent or a fleet's task that never
  /// runs a command starts no bash.
  bool start_shell_early = false;
  /// The shell started before the executor, for it to take instead of starting one; null:
  /// none was (tools/shell.hpp).
  std::shared_ptr<shell_ahead> started_shell;
  std::string shell_program = "/bin/bash";
  /// Shell commands that do not set their own timeout are killed after this long.
  std::chrono::milliseconds shell_timeout{120000};
  /// Tags every process the tools start (TROUPE_PROCESS_OWNER, the session's id): what they
  /// leave behind is found by it and stopped when the session ends. Empty: untagged.
  std::string process_owner;
  /// Variables the session's processes get over troupe's own: TROUPE_SESSION_ID (this
  /// session's id, a subagent's its own), TROUPE_HOME, TROUPE_BIN (a child_environment).
  std::map<std::string, std::string> environment;
  /// Set per call from tool_call::approved_path: a file tool whose path now leads anywhere else
  /// refuses the call. Empty: nothing to hold it to.
  std::string approved_path;
  /// The deny rule (its text) that forbids reading a path, if one does: the search tools leave
  /// such files out and say so. Unset: no rule denies reading.
  std::function<std::optional<std::string>(const std::filesystem::path&)> read_denied;
  /// The walls of the session's tool processes, which the file tools hold to as well; null:
  /// no sandbox.
  std::shared_ptr<const sandbox_policy> sandbox;
  /// Set once nobody waits for the call any more (an interrupt, the session ending): a long
  /// scan stops early. Unset: never.
  std::shared_ptr<const std::atomic<bool>> cancelled;
};

/// True when the call running with `ctx` has been cancelled.
inline bool cancel_requested(const tool_context& ctx) {
  return ctx.cancelled && ctx.cancelled->load(std::memory_order_relaxed);
}

/// What a search (glob, grep, ls) leaves out because a read deny rule forbids it; its note
/// goes into the result, so the model knows the listing is not the whole tree.
struct denied_paths {
  size_t count = 0;
  std::vector<std::string> rules;

  /// True (and counted) when a rule of `ctx` denies reading `path`.
  bool check(const tool_context& ctx, const std::filesystem::path& path);
  /// "[skipped N paths that a deny rule forbids reading: read(…)]", or empty when none was.
  std::string note() const;
};

/// How the executor runs a tool.
enum class tool_kind : uint8_t {
  function, ///< quick, bounded work: `run` is called directly on the executor
  scan,     ///< read-only work that may take long (a search over a tree): `run` is called on a
            ///< runner thread, so a reply's scans run in parallel and a cancel answers at once
  process,  ///< a child process, started by the executor and read off the scheduler threads
  task,     ///< acts on the executor's background tasks (task_output, task_stop)
  subagent, ///< launches or resumes a subagent: carried out by the session, not the executor
  mcp,      ///< a tool of an MCP server (mcp__<server>__<tool>): carried out by its actor
};

/// What a successful call changes in the loop itself, beyond its result.
enum class loop_effect : uint8_t {
  none,
  complete, ///< the run ends `completed`, the result's output as its final text
  todos,    ///< the call's `todos` input becomes the agent's task list in the loop state
};

/// An example call as a markdown block: ```<first block name> args\nbody```.
struct block_example {
  std::string args;
  std::string body;
};

/// Everything troupe knows about one tool.
struct tool_spec {
  std::string name;
  /// One paragraph the model reads.
  std::string description;
  nlohmann::json input_schema = nlohmann::json::object();
  /// Markdown fence languages that invoke this tool (```shell, ```save PATH …).
  std::vector<std::string> block_names;
  /// Examples for the prompt, rendered by the serializer the parser reads.
  std::vector<block_example> examples;
  /// Changes nothing outside troupe: safe to run in parallel with other read-only calls, and
  /// allowed in plan mode.
  bool read_only = false;
  /// Creates or changes files (the `path` input): asked for in the default permission mode,
  /// allowed in accept-edits inside the workspace.
  bool writes_files = false;
  /// The input key a permission rule's pattern is matched against: `shell(git *)` matches
  /// the command, `write(src/**)` the path. Empty: rules name the tool only.
  std::string rule_subject;
  loop_effect effect = loop_effect::none;
  tool_kind kind = tool_kind::function;
  /// Builds the input from a fenced block: `args` follow the language on the fence line.
  std::function<nlohmann::json(std::string_view args, std::string_view body)> input_from_block;
  /// Runs a function tool; unset for process tools.
  std::function<tool_result(const nlohmann::json& input, const tool_context& ctx)> run;
};

/// Returns a descriptor of a spec as the model sees it.
tool_descriptor describe(const tool_spec& spec);

/// Checks input against the spec's schema (object, required keys, primitive types).
/// Returns a message for the model when it does not fit.
std::optional<std::string> validate_input(const tool_spec& spec, const nlohmann::json& input);

/// Returns an error result with the given message.
tool_result error_result(std::string message);

/// Returns `s` without leading and trailing spaces, tabs, carriage returns and newlines.
std::string_view trim(std::string_view s);

/// Resolves a path from tool input against the workspace (in a sandbox, /tmp/… is its own).
std::filesystem::path resolve_path(const tool_context& ctx, const std::string& path);

/// Why the session's sandbox refuses a file tool's write to `real` (where the path really
/// leads), as the tool's error; empty when it allows it or there is none.
std::string sandbox_refusal(const tool_context& ctx, const std::filesystem::path& real);

/// Writes `content` to `path` whole, creating parent directories. Returns an error message,
/// or an empty string on success.
std::string write_whole_file(const std::filesystem::path& path, const std::string& content);


/// True when the stream's first 8 KiB hold a NUL byte (what read and grep call binary). The
/// stream is rewound to its start.
bool starts_binary(std::istream& in);

/// Holds a result to the context's output_cap: a longer output is saved whole as
/// `<results_dir>/<call_id>.txt` (when results_dir is set) and cut to its head and tail, the
/// note naming the file.
void apply_output_budget(tool_result& result, const tool_context& ctx, const std::string& call_id);

/// Moves `pos` back to the start of the UTF-8 character it falls in.
size_t char_boundary(const std::string& text, size_t pos);

/// Keeps the head and tail of `text` within `cap` bytes (cut at UTF-8 character boundaries),
/// with a note where the middle was cut; `saved_to`, when given, is named in the note as
/// where the whole text is. Returns true when it cut anything.
bool cap_output(std::string& text, size_t cap, const std::string& saved_to = "");

} // namespace troupe
