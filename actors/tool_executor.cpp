#include "actors/tool_executor.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <vector>
#include <unordered_map>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/ids.hpp"
#include "actors/shell_reader.hpp"
#include "tools/shell.hpp"

namespace troupe {

namespace {

/// A child process in flight.
struct running_job {
  caf::typed_response_promise<tool_result> promise;
  std::string call_id;
  pid_t pid = -1;
  /// Writing here tells the reader to give up (see abandon).
  int wake = -1;
  std::chrono::milliseconds timeout{0};
  bool timed_out = false;
  bool interrupted = false;
};

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
  /// The session's bash, started on first use and again after it ends.
  shell_process shell;

  ~tool_executor_state() {
    // Never leave a child behind: the shell's group holds every command and background job.
    // Readers are told to stop; each closes its own copy of the pipe.
    for (auto& [id, job] : jobs) {
      [[maybe_unused]] auto n = ::write(job.wake, "x", 1);
      ::close(job.wake);
    }
    stop_shell(shell, true);
  }
};

using self_ptr = tool_executor_actor::stateful_pointer<tool_executor_state>;

std::string available_tools(const tool_registry& registry) {
  std::string names;
  for (auto& name : registry.names())
    names += (names.empty() ? "" : ", ") + name;
  return names;
}

/// Marks the grace timer of a killed job; job ids stay far below it.
constexpr uint64_t grace_bit = uint64_t{1} << 63;

/// How long a killed command may take to close its output before it is given up on.
constexpr std::chrono::seconds kill_grace{2};

void kill_job(self_ptr self, uint64_t id, running_job& job) {
  ::kill(-job.pid, SIGKILL);
  self->delayed_send(self, kill_grace, due_atom::value, id | grace_bit);
}

// A killed command whose output never closes: a process that left the shell's group holds the
// pipe. Answer without the rest of its output, replace the shell, and let the reader go.
void abandon(self_ptr self, std::unordered_map<uint64_t, running_job>::iterator i) {
  auto& job = i->second;
  process_exit exit;
  exit.exit_code = 137;
  auto result = shell_result(exit, job.timed_out, job.timeout, job.interrupted);
  result.output += "\n[a process that left the shell's process group still holds its output; "
                   "the rest of the output is lost]";
  [[maybe_unused]] auto n = ::write(job.wake, "x", 1);
  ::close(job.wake);
  job.promise.deliver(std::move(result));
  stop_shell(self->state.shell, true);
  self->state.jobs.erase(i);
}

tool_result run_function_tool(const tool_spec& spec, const nlohmann::json& input,
                              const tool_context& context) {
  try {
    return spec.run(input, context);
  } catch (const std::exception& e) {
    return error_result("tool '" + spec.name + "' failed: " + e.what());
  }
}

caf::result<tool_result> execute(self_ptr self, const tool_call& call) {
  auto& st = self->state;
  const auto* spec = st.registry->find(call.name);
  if (spec == nullptr)
    return error_result("unknown tool '" + call.name +
                        "'; available tools: " + available_tools(*st.registry));
  if (auto problem = validate_input(*spec, call.input))
    return error_result(*problem);
  if (spec->kind == tool_kind::function && spec->read_only) {
    // Off this actor and off the scheduler: a grep over a large tree must neither block the
    // executor (cancels, other calls of the same reply) nor a scheduler thread.
    auto id = st.next_job++;
    auto promise = self->make_response_promise<tool_result>();
    st.helpers.emplace(id, tool_executor_state::helper_call{promise, call.id});
    self->system().spawn<caf::detached>(
      [id, registry = st.registry, spec, input = call.input, context = st.context,
       executor = tool_executor_actor{self}](caf::event_based_actor* helper) {
        caf::anon_send(executor, finished_atom::value, id, run_function_tool(*spec, input, context));
        helper->quit();
      });
    return promise;
  }
  if (spec->kind == tool_kind::function) {
    auto result = run_function_tool(*spec, call.input, st.context);
    apply_output_budget(result, st.context, call.id);
    return result;
  }
  if (!st.jobs.empty())
    return error_result("the shell is busy with another command; run commands one at a time");
  if (st.shell.pid < 0) {
    auto started = start_shell(st.context, random_hex(16));
    if (!started)
      return error_result(started.error());
    st.shell = std::move(*started);
  }
  if (auto sent = send_command(st.shell, call.input.at("command").get<std::string>()); !sent) {
    stop_shell(st.shell, true);
    return error_result(sent.error() + "; the shell was restarted, run the command again");
  }
  int wake[2];
  int output_copy = ::fcntl(st.shell.output_fd, F_DUPFD_CLOEXEC, 0);
  if (output_copy < 0 || ::pipe2(wake, O_CLOEXEC) != 0) {
    if (output_copy >= 0)
      ::close(output_copy);
    return error_result("cannot set up reading the shell's output: too many open files?");
  }
  auto id = st.next_job++;
  running_job job;
  job.promise = self->make_response_promise<tool_result>();
  job.call_id = call.id;
  job.pid = st.shell.pid;
  job.wake = wake[1];
  job.timeout = shell_timeout(call.input, st.context);
  auto promise = job.promise;
  self->delayed_send(self, job.timeout, due_atom::value, id);
  st.jobs.emplace(id, std::move(job));
  spawn_shell_reader(self->system(), st.shell, output_copy, wake[0], st.context.capture_cap, id,
                     self);
  return promise;
}

tool_executor_actor::behavior_type tool_executor(self_ptr self,
                                                 std::shared_ptr<const tool_registry> registry,
                                                 tool_context context) {
  self->state.registry = std::move(registry);
  self->state.context = std::move(context);
  return {
    [=](execute_atom, const tool_call& call) -> caf::result<tool_result> {
      return execute(self, call);
    },
    [=](cancel_atom) {
      for (auto& [id, job] : self->state.jobs) {
        job.interrupted = true;
        kill_job(self, id, job);
      }
      // A read-only call cannot be stopped midway; it is answered now and its result dropped.
      for (auto& [id, helper] : self->state.helpers) {
        auto result = error_result("[interrupted before the call finished]");
        result.exit_code = 130;
        helper.promise.deliver(std::move(result));
      }
      self->state.helpers.clear();
    },
    [=](finished_atom, uint64_t id, tool_result& result) {
      auto i = self->state.helpers.find(id);
      if (i == self->state.helpers.end())
        return;
      apply_output_budget(result, self->state.context, i->second.call_id);
      i->second.promise.deliver(std::move(result));
      self->state.helpers.erase(i);
    },
    [=](due_atom, uint64_t timer) {
      bool grace_over = (timer & grace_bit) != 0;
      auto i = self->state.jobs.find(timer & ~grace_bit);
      if (i == self->state.jobs.end())
        return;
      if (grace_over) {
        abandon(self, i);
        return;
      }
      spdlog::debug("tool job {} timed out after {} ms", i->first, i->second.timeout.count());
      i->second.timed_out = true;
      kill_job(self, i->first, i->second);
    },
    [=](exited_atom, const process_exit& exit) {
      auto i = self->state.jobs.find(exit.job);
      if (i == self->state.jobs.end())
        return;
      auto& job = i->second;
      auto result = shell_result(exit, job.timed_out, job.timeout, job.interrupted);
      if (exit.shell_exited || job.timed_out || job.interrupted) {
        // bash is gone (reaped by the reader) or was just killed (reaped here); what is left
        // of its group goes too, and the next command starts a fresh shell in the workspace.
        stop_shell(self->state.shell, !exit.shell_exited);
        if (!job.timed_out && !job.interrupted)
          result.output += "\n[the shell exited; the next command starts a new one]";
      }
      apply_output_budget(result, self->state.context, job.call_id);
      job.promise.deliver(std::move(result));
      ::close(job.wake);
      self->state.jobs.erase(i);
    },
  };
}

} // namespace

tool_executor_actor spawn_tool_executor(caf::actor_system& sys,
                                        std::shared_ptr<const tool_registry> registry,
                                        tool_context context) {
  return sys.spawn(tool_executor, std::move(registry), std::move(context));
}

} // namespace troupe
