#include "actors/tool_executor.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <vector>
#include <unordered_map>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "store/ids.hpp"
#include "actors/process_runner.hpp"
#include "tools/child_process.hpp"
#include "protocol/mcp.hpp"
#include "protocol/shell_reader.hpp"
#include "tools/process_reaper.hpp"
#include "tools/sandbox.hpp"
#include "tools/shell.hpp"
#include "tools/task_output.hpp"
#include "tools/task_wait.hpp"

namespace troupe {

namespace {

/// A shell command in flight.
struct running_job {
  caf::typed_response_promise<tool_result> promise;
  std::string call_id;
  /// Stops its supervision (kills the shell's group); dropped, it gives the command up.
  child_control control;
  std::chrono::milliseconds timeout{0};
  std::chrono::steady_clock::time_point started;
  bool timed_out = false;
  bool interrupted = false;
};

/// A command started with run_in_background.
struct background_task {
  /// Stops it (task_stop); dropped with the executor, it kills the task at once.
  child_control control;
  std::string command;
  std::filesystem::path log;
  std::chrono::steady_clock::time_point started;
  std::optional<int32_t> exit_code;
  bool stopped = false;
  /// task_output calls waiting for the task to end, by waiter id, with their call ids.
  std::unordered_map<uint64_t, std::pair<caf::typed_response_promise<tool_result>, std::string>>
    waiters;
};

struct tool_executor_state;
tool_result task_report(const tool_executor_state& st, const std::string& id,
                        const background_task& task, const std::string& call_id);

struct tool_executor_state {
  std::shared_ptr<const tool_registry> registry;
  tool_context context;
  uint64_t next_job = 0;
  std::unordered_map<uint64_t, running_job> jobs;
  /// Read-only calls running on threads of their own, by job id.
  struct helper_call {
    caf::typed_response_promise<tool_result> promise;
    std::string call_id;
  };
  std::unordered_map<uint64_t, helper_call> helpers;
  /// A runner thread and the flag that tells the call it runs to stop (see cancel_requested).
  struct runner {
    tool_runner_actor actor;
    std::shared_ptr<std::atomic<bool>> cancelled;
  };
  /// Runners waiting for work, and the one running each job (kept past a cancel, so the
  /// runner returns to the pool when its call finishes).
  std::vector<runner> idle_runners;
  std::unordered_map<uint64_t, runner> busy_runners;
  /// The session's bash, started on first use and again after it ends.
  shell_process shell;
  /// Reads each command's output (protocol/shell_reader.hpp); started with the shell.
  shell_reader_actor shell_reader;
  /// The session asked for the shell ahead of its first command (once: start_atom).
  bool shell_asked_early = false;
  /// A shell or a background task was ever started: only then can something be left behind
  /// to sweep at the end (a fleet's ten thousand agents that ran no process skip the walk).
  bool started_processes = false;
  /// Counts shell commands: an idle timer whose count is still the latest finds the shell idle.
  uint64_t shell_commands = 0;
  /// The shell was stopped for being idle: the next command's result says it runs in a new one.
  bool shell_stopped_idle = false;
  std::map<std::string, background_task> tasks;
  uint64_t next_waiter = 0;
  /// Told when a background task ends on its own (not stopped, nobody waiting for it).
  session_actor session;
  /// The MCP servers the agent uses, by name, and the server of each MCP call in flight.
  std::map<std::string, mcp_server_actor> mcp_servers;
  std::map<std::string, std::string> mcp_calls;
  std::vector<mcp_server_actor> owned_mcp_servers;
  /// Writes the ends of tasks stopped at shutdown to the durable queue, off this thread.
  disk_io_actor disk;

  ~tool_executor_state() {
    // The agent's own MCP servers end with it (their processes with them).
    for (auto& server : owned_mcp_servers)
      caf::anon_send_exit(server, caf::exit_reason::user_shutdown);
    // Background tasks end with the session: dropping their holds kills them, and their
    // supervisors reap them and what they left. Each one stopped here is news the session never
    // heard: it goes to the durable queue, read on the next resume.
    for (auto& [id, task] : tasks)
      if (!task.exit_code && !task.stopped)
        report_stopped(id, task);
    tasks.clear();
    // Never leave a child behind: the shell's group holds every command and background job.
    // A command's supervisor gives up once its hold is dropped.
    jobs.clear();
    shell.owner.clear(); // the session's sweep below covers the shell's unit: one scan, not two
    stop_shell(shell, true);
    // And whatever any of them left behind: setsid'd, double-forked or re-parented, it carries
    // the session's tag. Background tasks' waiters sweep their own units as they reap them.
    if (started_processes)
      stop_owned_processes(context.process_owner);
    // Its command (if any) was given up above: it ends as soon as that supervision returns.
    if (shell_reader)
      caf::anon_send_exit(shell_reader, caf::exit_reason::user_shutdown);
    for (auto& idle : idle_runners)
      caf::anon_send_exit(idle.actor, caf::exit_reason::user_shutdown);
    // A busy runner is a thread the actor system waits for at exit: its scan stops now.
    for (auto& [job, busy] : busy_runners) {
      busy.cancelled->store(true);
      caf::anon_send_exit(busy.actor, caf::exit_reason::user_shutdown);
    }
  }

  void report_stopped(const std::string& id, const background_task& task) const {
    if (context.notification_queue.empty())
      return;
    task_notification n;
    n.id = new_message_id();
    n.source = "shell";
    n.task_id = id;
    n.status = "stopped";
    n.description = task.command;
    n.text = "[stopped: the session ended while the task was still running]\n" +
             task_report(*this, id, task, "notification-" + id).output;
    n.sent_at_us = now_us();
    caf::anon_send(disk, append_atom::value, context.notification_queue.string(), std::move(n));
  }
};

/// Whether a process has children of its own (its main thread's list in /proc).
bool has_children(pid_t pid) {
  auto path = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children";
  std::ifstream in{path};
  std::string first;
  return in && (in >> first) && !first.empty();
}

/// Marks an idle timer's due_atom (its count below); a command's timeout is its reader's.
constexpr uint64_t idle_timer_bit = uint64_t{1} << 63;

/// Most idle runners kept for the next calls (one reply runs at most 10 read-only calls).
constexpr size_t max_idle_runners = 10;

using self_ptr = tool_executor_actor::stateful_pointer<tool_executor_state>;

/// How long a killed command may take to close its output before it is given up on.
constexpr std::chrono::seconds kill_grace{2};

shell_reader_actor spawn_shell_reader(self_ptr self) {
  auto cap = self->state.context.capture_cap;
  return self->system().spawn<caf::detached>(
    [cap, executor = tool_executor_actor{self}](
      shell_reader_actor::pointer) -> shell_reader_actor::behavior_type {
      return {[=](execute_atom, uint64_t job, int32_t pid, int32_t output, int32_t control,
                  const std::string& nonce, int64_t timeout_ms) {
        // Named (once), so that `ps -L` (and the tests) tell it from CAF's own threads.
        static thread_local bool named = false;
        if (!std::exchange(named, true))
          ::pthread_setname_np(::pthread_self(), "shell.reader");
        shell_process framed;
        framed.nonce = nonce;
        // The timeout is kept here, on the reader's clock: a timer of the actor system's per
        // command woke its clock thread at every step.
        auto how = command_supervision(framed, cap, kill_grace);
        how.timeout = std::chrono::milliseconds{timeout_ms};
        auto end = supervise_child(started_child{pid, -1, output, -1}, how, control);
        auto exit = command_exit(end);
        exit.job = job;
        caf::anon_send(executor, exited_atom::value, std::move(exit));
      }};
    });
}

/// The shell started for this context before the executor was (troupe run's top-level agent),
/// while it is still there to take; else a new one.
expected<shell_process> take_or_start_shell(const tool_context& context) {
  if (context.started_shell)
    if (auto shell = context.started_shell->take())
      return std::move(*shell);
  return start_shell(context, random_hex(16));
}

/// The reader for the executor's shell, watched: if it ever ends before the executor, the
/// command it was reading is answered with an error and the next command gets a new reader.
void start_shell_reader(self_ptr self) {
  auto& st = self->state;
  st.shell_reader = spawn_shell_reader(self);
  self->monitor(st.shell_reader);
}

/// Starts the shell and its reader before the first command, when the step asks with the
/// session's first model request (start_atom): bash in its sandbox (~10 ms of CPU) then starts
/// while the request goes and the model answers, instead of inside the first step. A run's
/// top-level agent has its shell started ahead, at launch: it is taken here instead.
/// Only for the top-level agent (tool_context::start_shell_early), where the shell is offered;
/// once, and not when a command started it already.
void warm_up_shell(self_ptr self) {
  auto& st = self->state;
  if (std::exchange(st.shell_asked_early, true) || st.shell.pid >= 0 || !st.jobs.empty())
    return;
  const auto* shell = st.registry->find("shell");
  if (!st.context.start_shell_early || !shell || shell->kind != tool_kind::process)
    return;
  auto started = take_or_start_shell(st.context);
  if (!started) {
    // Said again, as the call's result, by the first command that tries to start it.
    spdlog::debug("the shell was not started ahead: {}", started.error());
    return;
  }
  st.shell = std::move(*started);
  st.started_processes = true;
  start_shell_reader(self);
}

/// Ends the reader (its thread): with the shell stopped for being idle, a fleet's thousands of
/// waiting agents keep no thread each. The next command starts another.
void stop_shell_reader(tool_executor_state& st) {
  if (!st.shell_reader)
    return;
  caf::anon_send_exit(st.shell_reader, caf::exit_reason::user_shutdown);
  st.shell_reader = nullptr;
}

std::string available_tools(const tool_registry& registry) {
  std::string names;
  for (auto& name : registry.names())
    names += (names.empty() ? "" : ", ") + name;
  return names;
}

tool_result run_function_tool(const tool_spec& spec, const tool_call& call,
                              const tool_context& context) {
  tool_result result;
  try {
    if (call.approved_path.empty()) {
      result = spec.run(call.input, context);
    } else {
      auto for_call = context;
      for_call.approved_path = call.approved_path;
      result = spec.run(call.input, for_call);
    }
  } catch (const std::exception& e) {
    return error_result("tool '" + spec.name + "' failed: " + e.what());
  }
  // Paths in the sandbox's /tmp as the model named them, not where they are on the host.
  if (context.sandbox)
    result.output = context.sandbox->inside_view(std::move(result.output));
  return result;
}

std::string task_ids(const tool_executor_state& st) {
  std::string ids;
  for (auto& [id, task] : st.tasks)
    ids += (ids.empty() ? "" : ", ") + id;
  return ids.empty() ? "none started" : ids;
}

// What a task printed so far, under a line saying how it stands.
tool_result task_report(const tool_executor_state& st, const std::string& id,
                        const background_task& task, const std::string& call_id) {
  auto seconds = std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::steady_clock::now() - task.started)
                   .count();
  tool_result result;
  // The log's head and tail, within the budget (with room for the status line): a task may
  // have written gigabytes, and this runs on the executor.
  auto cap = st.context.output_cap;
  auto output = log_excerpt(task.log, cap > 1024 ? cap - 512 : cap / 2);
  if (st.context.sandbox)
    if (auto note = st.context.sandbox->note_for(output); !note.empty())
      output += "\n" + note;
  std::string status;
  if (task.stopped)
    status = "stopped by task_stop";
  else if (task.exit_code)
    status = "exited with code " + std::to_string(*task.exit_code);
  else
    status = "still running after " + std::to_string(seconds) + " s";
  result.output = "[task " + id + " (" + task.command + "): " + status + "]\n" + output;
  if (task.exit_code) {
    result.exit_code = *task.exit_code;
    result.is_error = *task.exit_code != 0 && !task.stopped;
  }
  apply_output_budget(result, st.context, call_id);
  return result;
}

void answer_waiters(self_ptr self, const std::string& id, background_task& task,
                    const std::string& note = "") {
  for (auto& [waiter, pending] : task.waiters) {
    auto result = task_report(self->state, id, task, pending.second);
    result.output += note;
    pending.first.deliver(std::move(result));
  }
  task.waiters.clear();
}

caf::result<tool_result> start_task(self_ptr self, const tool_call& call) {
  auto& st = self->state;
  if (st.context.tasks_dir.empty())
    st.context.tasks_dir =
      std::filesystem::temp_directory_path() / ("troupe-tasks-" + random_hex(12));
  auto id = "task_" + random_hex(6);
  auto command = call.input.at("command").get<std::string>();
  auto log = st.context.tasks_dir / (id + ".log");
  auto owner = st.context.process_owner.empty() ? std::string{}
                                                : st.context.process_owner + "/" + id;
  auto control = child_control::make();
  if (!control)
    return error_result(control.error());
  st.started_processes = true;
  auto child = start_background(st.context, command, log, owner);
  if (!child) {
    ::close(control->second);
    return error_result(child.error());
  }
  auto pid = child->pid;
  background_task task;
  task.control = std::move(control->first);
  task.command = command;
  task.log = log;
  task.started = std::chrono::steady_clock::now();
  st.tasks.emplace(id, std::move(task));
  // Its supervisor reaps it, stops what it left behind (a task ends with its command, stopped
  // or not) and reports its exit code.
  supervision how;
  how.owner = owner;
  run_child_detached(self->system(), *child, std::move(how), control->second,
                     [id, executor = tool_executor_actor{self}](child_end end) {
                       caf::anon_send(executor, exited_atom::value, id, end.exit_code);
                     });
  tool_result result;
  result.output = "Started background task " + id + " (pid " + std::to_string(pid) +
                  "): " + command + "\nIts output goes to " + log.string() +
                  ". Read it with task_output, end it with task_stop.";
  return result;
}

caf::result<tool_result> run_task_tool(self_ptr self, const tool_call& call) {
  auto& st = self->state;
  auto id = call.input.at("task_id").get<std::string>();
  auto i = st.tasks.find(id);
  if (i == st.tasks.end())
    return error_result("no background task '" + id + "' in this session (tasks: " +
                        task_ids(st) + ")");
  auto& task = i->second;
  if (call.name == "task_stop") {
    if (task.exit_code)
      return task_report(st, id, task, call.id);
    task.control.stop();
    task.stopped = true;
    auto result = task_report(st, id, task, call.id);
    answer_waiters(self, id, task, "\n[the task was stopped]");
    return result;
  }
  bool block = call.input.value("block", true);
  if (task.exit_code || !block)
    return task_report(st, id, task, call.id);
  auto wait = task_wait_timeout(call.input);
  auto waiter = st.next_waiter++;
  auto promise = self->make_response_promise<tool_result>();
  task.waiters.emplace(waiter, std::make_pair(promise, call.id));
  self->delayed_send(self, wait, due_atom::value, id, waiter);
  return promise;
}

std::string server_names(const tool_executor_state& st) {
  std::string names;
  for (auto& [name, actor] : st.mcp_servers)
    names += (names.empty() ? "" : ", ") + name;
  return names;
}

// What a call to a tool the session does not offer is told: the built-in tools there are and
// the MCP servers configured (started or not), or that there are none.
std::string unknown_tool(const tool_executor_state& st, const std::string& name) {
  auto builtin = available_tools(*st.registry);
  auto servers = server_names(st);
  std::string out = "unknown tool '" + name + "'; ";
  if (builtin.empty() && servers.empty())
    return out + "this session has no tools";
  if (!builtin.empty())
    out += "available tools: " + builtin;
  if (!servers.empty())
    out += (builtin.empty() ? "" : "; ") +
           std::string{"configured MCP servers (their tools are mcp__SERVER__TOOL): "} + servers;
  return out;
}

// An MCP tool's call goes to its server's actor, which answers it (or says why it cannot);
// the result is held to the output budget here, like every tool's.
caf::result<tool_result> execute_mcp(self_ptr self, const std::string& server,
                                     const tool_call& call) {
  auto& st = self->state;
  auto found = st.mcp_servers.find(server);
  if (found == st.mcp_servers.end()) {
    auto names = server_names(st);
    return error_result("unknown MCP server '" + server + "' in '" + call.name +
                        "'; configured servers: " + (names.empty() ? "none" : names));
  }
  auto promise = self->make_response_promise<tool_result>();
  st.mcp_calls[call.id] = server;
  auto deliver = [=](tool_result result) mutable {
    auto& state = self->state;
    state.mcp_calls.erase(call.id);
    apply_output_budget(result, state.context, call.id);
    promise.deliver(std::move(result));
  };
  self
    ->request(found->second, caf::infinite, execute_atom::value, call,
              st.context.results_dir.string(), st.session)
    .then([=](tool_result& result) mutable { deliver(std::move(result)); },
          [=](caf::error& err) mutable {
            deliver(error_result("the MCP server '" + server + "' is gone (" +
                                 self->system().render(err) + ")"));
          });
  return promise;
}

caf::result<tool_result> execute(self_ptr self, const tool_call& call) {
  auto& st = self->state;
  if (auto server = mcp_server_of(call.name); !server.empty())
    return execute_mcp(self, server, call);
  const auto* spec = st.registry->find(call.name);
  if (spec == nullptr)
    return error_result(unknown_tool(st, call.name));
  if (auto problem = validate_input(*spec, call.input))
    return error_result(*problem);
  if (spec->kind == tool_kind::task)
    return run_task_tool(self, call);
  if (spec->kind == tool_kind::subagent)
    return error_result("the " + call.name + " tool is carried out by the session, not here");
  if (spec->kind == tool_kind::process && call.input.value("run_in_background", false))
    return start_task(self, call);
  if (spec->kind == tool_kind::scan) {
    // Off this actor and off the scheduler: a grep over a large tree must neither block the
    // executor (cancels, other calls of the same reply) nor a scheduler thread.
    auto id = st.next_job++;
    auto promise = self->make_response_promise<tool_result>();
    st.helpers.emplace(id, tool_executor_state::helper_call{promise, call.id});
    tool_executor_state::runner runner;
    if (st.idle_runners.empty()) {
      runner.cancelled = std::make_shared<std::atomic<bool>>(false);
      auto context = st.context;
      context.cancelled = runner.cancelled;
      runner.actor = self->system().spawn<caf::detached>(
        [registry = st.registry, context = std::move(context),
         executor = tool_executor_actor{self}](tool_runner_actor::pointer)
          -> tool_runner_actor::behavior_type {
          return {[=](execute_atom, uint64_t job, const tool_call& work) {
            const auto* tool = registry->find(work.name);
            caf::anon_send(executor, finished_atom::value, job,
                           run_function_tool(*tool, work, context));
          }};
        });
    } else {
      runner = std::move(st.idle_runners.back());
      st.idle_runners.pop_back();
      runner.cancelled->store(false); // idle: its last call has returned
    }
    caf::anon_send(runner.actor, execute_atom::value, id, call);
    st.busy_runners.emplace(id, std::move(runner));
    return promise;
  }
  if (spec->kind == tool_kind::function) {
    // Bounded work (read stops at four times the budget): a hop to a runner thread would
    // cost more than the call.
    auto result = run_function_tool(*spec, call, st.context);
    apply_output_budget(result, st.context, call.id);
    return result;
  }
  if (!st.jobs.empty())
    return error_result("the shell is busy with another command; run commands one at a time");
  ++st.shell_commands;
  if (st.shell.pid >= 0) {
    // A shell that has ended since its last command ended (started ahead and never used, or
    // killed from outside in between) gives this command a fresh one (and its error, if bash
    // cannot start), not a broken pipe.
    int status = 0;
    if (wait_child(st.shell.pid, status, WNOHANG) != 0)
      stop_shell(st.shell, false);
  }
  if (st.shell.pid < 0) {
    auto started = take_or_start_shell(st.context);
    if (!started)
      return error_result(started.error());
    st.shell = std::move(*started);
    st.started_processes = true;
  }
  if (auto sent = send_command(st.shell, call.input.at("command").get<std::string>()); !sent) {
    stop_shell(st.shell, true);
    return error_result(sent.error() + "; the shell was restarted, run the command again");
  }
  auto control = child_control::make();
  int output_copy = ::fcntl(st.shell.output_fd, F_DUPFD_CLOEXEC, 0);
  if (output_copy < 0 || !control) {
    if (output_copy >= 0)
      ::close(output_copy);
    return error_result("cannot set up reading the shell's output: too many open files?");
  }
  auto id = st.next_job++;
  running_job job;
  job.promise = self->make_response_promise<tool_result>();
  job.call_id = call.id;
  job.control = std::move(control->first);
  job.timeout = shell_timeout(call.input, st.context);
  job.started = std::chrono::steady_clock::now();
  auto promise = job.promise;
  auto timeout_ms = static_cast<int64_t>(job.timeout.count());
  st.jobs.emplace(id, std::move(job));
  // Read to the command's end marker on the reader's thread, from the reader's own copy of the
  // pipe; a stop kills the shell's group, a dropped hold gives the command up.
  if (!st.shell_reader)
    start_shell_reader(self);
  self->send(st.shell_reader, execute_atom::value, id, static_cast<int32_t>(st.shell.pid),
             static_cast<int32_t>(output_copy), static_cast<int32_t>(control->second),
             st.shell.nonce, timeout_ms);
  return promise;
}

tool_executor_actor::behavior_type tool_executor(self_ptr self,
                                                 std::shared_ptr<const tool_registry> registry,
                                                 tool_context context, disk_io_actor disk,
                                                 std::map<std::string, mcp_server_actor> mcp,
                                                 std::vector<mcp_server_actor> owned) {
  self->state.registry = std::move(registry);
  self->state.mcp_servers = std::move(mcp);
  self->state.owned_mcp_servers = std::move(owned);
  self->state.context = std::move(context);
  self->state.disk = std::move(disk);
  self->set_down_handler([=](caf::down_msg& down) {
    auto& st = self->state;
    if (!st.shell_reader || down.source != caf::actor_cast<caf::actor_addr>(st.shell_reader))
      return; // one stopped on purpose
    // The command it read for would never be answered: it is now, and the shell, whose
    // output nobody reads any more, starts again with the next command.
    st.shell_reader = nullptr;
    for (auto& [id, job] : st.jobs)
      job.promise.deliver(error_result("the shell's output reader ended (" +
                                       self->system().render(down.reason) +
                                       "); the shell was restarted, run the command again"));
    st.jobs.clear();
    stop_shell(st.shell, true);
  });
  return {
    [=](execute_atom, const tool_call& call) -> caf::result<tool_result> {
      return execute(self, call);
    },
    [=](start_atom) { warm_up_shell(self); },
    [=](cancel_atom) {
      // An MCP call is given up by its server, which tells the server and answers it.
      for (auto& [call_id, server] : self->state.mcp_calls)
        if (auto found = self->state.mcp_servers.find(server);
            found != self->state.mcp_servers.end())
          self->send(found->second, cancel_atom::value, call_id);
      for (auto& [id, job] : self->state.jobs) {
        job.interrupted = true;
        job.control.stop();
      }
      // A scan is answered now and its result dropped; its runner is told to stop early.
      for (auto& [id, busy] : self->state.busy_runners)
        busy.cancelled->store(true);
      for (auto& [id, helper] : self->state.helpers) {
        auto result = error_result("[interrupted before the call finished]");
        result.exit_code = 130;
        helper.promise.deliver(std::move(result));
      }
      self->state.helpers.clear();
      for (auto& [id, task] : self->state.tasks)
        answer_waiters(self, id, task, "\n[interrupted while waiting; the task goes on]");
    },
    [=](exited_atom, const std::string& id, int32_t code) {
      auto& st = self->state;
      auto i = st.tasks.find(id);
      if (i == st.tasks.end())
        return;
      auto& task = i->second;
      task.exit_code = code;
      bool someone_waits = !task.waiters.empty();
      answer_waiters(self, id, task);
      if (someone_waits || task.stopped || !st.session)
        return;
      // Nobody is waiting for it: the session hears of its end as a task notification.
      task_notification n;
      n.id = new_message_id();
      n.source = "shell";
      n.task_id = id;
      n.status = code == 0 ? "completed" : "failed";
      n.description = task.command;
      n.text = task_report(st, id, task, "notification-" + id).output;
      n.sent_at_us = now_us();
      caf::anon_send(st.session, notify_atom::value, std::move(n));
    },
    [=](subscribe_atom, session_actor& session) { self->state.session = std::move(session); },
    [=](due_atom, const std::string& id, uint64_t waiter) {
      auto i = self->state.tasks.find(id);
      if (i == self->state.tasks.end())
        return;
      auto w = i->second.waiters.find(waiter);
      if (w == i->second.waiters.end())
        return;
      auto result = task_report(self->state, id, i->second, w->second.second);
      w->second.first.deliver(std::move(result));
      i->second.waiters.erase(w);
    },
    [=](finished_atom, uint64_t id, tool_result& result) {
      auto& st = self->state;
      if (auto r = st.busy_runners.find(id); r != st.busy_runners.end()) {
        if (st.idle_runners.size() < max_idle_runners)
          st.idle_runners.push_back(std::move(r->second));
        else
          caf::anon_send_exit(r->second.actor, caf::exit_reason::user_shutdown);
        st.busy_runners.erase(r);
      }
      auto i = self->state.helpers.find(id);
      if (i == self->state.helpers.end())
        return;
      apply_output_budget(result, self->state.context, i->second.call_id);
      i->second.promise.deliver(std::move(result));
      self->state.helpers.erase(i);
    },
    [=](due_atom, uint64_t id) {
      auto& st = self->state;
      if ((id & idle_timer_bit) != 0) {
        // Idle since the command this timer followed: nothing runs in it, nothing came after.
        if ((id & ~idle_timer_bit) != st.shell_commands || !st.jobs.empty() || st.shell.pid < 0)
          return;
        // A job it runs (`server &`) is work, not idleness: looked at again later.
        if (has_children(st.shell.pid)) {
          self->delayed_send(self, st.context.shell_idle_stop, due_atom::value, id);
          return;
        }
        spdlog::debug("stopping the shell after {} ms idle", st.context.shell_idle_stop.count());
        stop_shell(st.shell, true);
        stop_shell_reader(st);
        st.shell_stopped_idle = true;
      }
    },
    [=](exited_atom, const process_exit& exit) {
      auto i = self->state.jobs.find(exit.job);
      if (i == self->state.jobs.end())
        return;
      auto& job = i->second;
      // The reader killed the shell's group at the command's timeout: the shell went, and the
      // time to it is the timeout's (a shell that exits on its own does so before it).
      if (exit.shell_exited && !job.interrupted &&
          std::chrono::steady_clock::now() - job.started >= job.timeout) {
        spdlog::debug("tool job {} timed out after {} ms", i->first, job.timeout.count());
        job.timed_out = true;
      }
      auto result = shell_result(exit, job.timed_out, job.timeout, job.interrupted);
      if (const auto& sandbox = self->state.context.sandbox) {
        if (auto note = sandbox->note_for(exit.output); !note.empty())
          result.output += "\n" + note;
        if (auto moved = sandbox->move_planted(); !moved.empty())
          result.output += "\n" + moved;
      }
      if (exit.shell_exited || job.timed_out || job.interrupted) {
        // bash is gone (reaped by the supervisor) or was just killed; what is left of its
        // group goes too, and the next command starts a fresh shell in the workspace.
        stop_shell(self->state.shell, true);
        if (!job.timed_out && !job.interrupted)
          result.output += "\n[the shell exited; the next command starts a new one]";
        else // the kill took the shell too: its directory and variables are gone
          result.output += "\n[the shell was killed with it; the next command starts a new one, "
                           "in the workspace]";
      }
      auto& st = self->state;
      if (st.shell_stopped_idle) {
        auto idle = st.context.shell_idle_stop.count();
        result.output = "[the shell had been idle for " +
                        (idle % 1000 == 0 ? std::to_string(idle / 1000) + " s"
                                          : std::to_string(idle) + " ms") +
                        " and was stopped: this command ran in a new one, in the workspace, "
                        "with no variables, functions or jobs of earlier commands]\n" +
                        result.output;
        st.shell_stopped_idle = false;
      }
      apply_output_budget(result, st.context, job.call_id);
      job.promise.deliver(std::move(result));
      st.jobs.erase(i);
      if (st.context.shell_idle_stop.count() > 0 && st.shell.pid >= 0)
        self->delayed_send(self, st.context.shell_idle_stop, due_atom::value,
                           idle_timer_bit | st.shell_commands);
    },
  };
}

} // namespace

tool_executor_actor spawn_tool_executor(caf::actor_system& sys,
                                        std::shared_ptr<const tool_registry> registry,
                                        tool_context context, disk_io_actor disk,
                                        std::map<std::string, mcp_server_actor> mcp_servers,
                                        std::vector<mcp_server_actor> owned) {
  return sys.spawn(tool_executor, std::move(registry), std::move(context), std::move(disk),
                   std::move(mcp_servers), std::move(owned));
}

} // namespace troupe
