#include "actors/tool_executor.hpp"

#include <signal.h>

#include <chrono>
#include <vector>
#include <unordered_map>

#include <caf/actor_system.hpp>
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
  pid_t pid = -1;
  std::chrono::milliseconds timeout{0};
  bool timed_out = false;
  bool interrupted = false;
};

struct tool_executor_state {
  std::shared_ptr<const tool_registry> registry;
  tool_context context;
  uint64_t next_job = 0;
  std::unordered_map<uint64_t, running_job> jobs;
  /// The session's bash, started on first use and again after it ends.
  shell_process shell;

  ~tool_executor_state() {
    // Never leave a child behind: the shell's group holds every command and background job.
    // A reader may still be blocked on the pipe; it is woken by the kill, not reaped here.
    stop_shell(shell, jobs.empty());
  }
};

using self_ptr = tool_executor_actor::stateful_pointer<tool_executor_state>;

std::string available_tools(const tool_registry& registry) {
  std::string names;
  for (auto& name : registry.names())
    names += (names.empty() ? "" : ", ") + name;
  return names;
}

caf::result<tool_result> execute(self_ptr self, const tool_call& call) {
  auto& st = self->state;
  const auto* spec = st.registry->find(call.name);
  if (spec == nullptr)
    return error_result("unknown tool '" + call.name +
                        "'; available tools: " + available_tools(*st.registry));
  if (auto problem = validate_input(*spec, call.input))
    return error_result(*problem);
  if (spec->kind == tool_kind::function) {
    try {
      return spec->run(call.input, st.context);
    } catch (const std::exception& e) {
      return error_result("tool '" + call.name + "' failed: " + e.what());
    }
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
  auto id = st.next_job++;
  running_job job;
  job.promise = self->make_response_promise<tool_result>();
  job.pid = st.shell.pid;
  job.timeout = shell_timeout(call.input, st.context);
  auto promise = job.promise;
  self->delayed_send(self, job.timeout, due_atom::value, id);
  st.jobs.emplace(id, std::move(job));
  spawn_shell_reader(self->system(), st.shell, st.context.output_cap, id, self);
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
        ::kill(-job.pid, SIGKILL);
      }
    },
    [=](due_atom, uint64_t id) {
      auto i = self->state.jobs.find(id);
      if (i == self->state.jobs.end())
        return;
      spdlog::debug("tool job {} timed out after {} ms", id, i->second.timeout.count());
      i->second.timed_out = true;
      ::kill(-i->second.pid, SIGKILL);
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
      job.promise.deliver(std::move(result));
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
