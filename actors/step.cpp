// The step actor's generation side: the step's start and finish, the model call, a reply cut at
// the output limit continued and joined, the reply handed to the session before its tools run
// (step_tools.cpp), compaction summaries, and interrupts.

#include "actors/step.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "store/ids.hpp"
#include "actors/step_state.hpp"
#include "tools/mcp_wire.hpp"
#include "context/continuation.hpp"
#include "tools/tool_parser.hpp"

namespace troupe {

void finish_step(step_ptr self, step_status status) {
  auto& st = self->state;
  st.outcome.status = status;
  st.phase = step_phase::idle;
  st.promise.deliver(std::move(st.outcome));
  st.outcome = step_outcome{};
}

namespace {

// A reply cut at the output limit is continued at most this often; its pieces are joined.
constexpr int32_t max_continuations = 3;

// The id a call without one gets: the reply's, numbered.
std::string generated_id(const message& reply, size_t i) {
  return "call_" + reply.id.substr(reply.id.find('_') + 1) + "_" + std::to_string(i);
}

// Whether any of the reply's calls would share an id with an earlier call, in the conversation
// or the reply. Looked up without a copy, so that the usual reply (fresh ids) costs a few
// comparisons per call, not a set of every id in the conversation, built again every step.
bool ids_clash(const step_state& st, const std::vector<tool_call>& calls, const message& reply) {
  constexpr size_t looked_through = 16; // beyond, the set below is cheaper than pairs
  if (calls.size() > looked_through)
    return true;
  std::vector<std::string> ids;
  for (size_t i = 0; i < calls.size(); ++i) {
    auto id = calls[i].id.empty() ? generated_id(reply, i) : calls[i].id;
    if (std::find(ids.begin(), ids.end(), id) != ids.end())
      return true;
    for (auto& m : st.request.context.messages)
      for (auto& call : m->tool_calls)
        if (call.id == id)
          return true;
    ids.push_back(std::move(id));
  }
  return false;
}

// Native calls come first, then calls written in the text; each gets an id. With native
// tool calling a block in the text is an illustration, never a command.
void collect_calls(step_state& st, message& reply) {
  auto calls = std::move(reply.tool_calls);
  for (auto& call : parse_text_calls(reply.content, st.config.format, *st.config.registry))
    calls.push_back(std::move(call));
  // Ids unique in the conversation the model sees: the APIs pair each result with its call by id
  // and refuse a conversation where two calls share one, which a server that reuses ids (within
  // a reply or from reply to reply) would otherwise make of every later request.
  if (!ids_clash(st, calls, reply)) {
    for (size_t i = 0; i < calls.size(); ++i)
      if (calls[i].id.empty())
        calls[i].id = generated_id(reply, i);
    reply.tool_calls = std::move(calls);
    return;
  }
  std::unordered_set<std::string> taken;
  for (auto& m : st.request.context.messages)
    for (auto& call : m->tool_calls)
      taken.insert(call.id);
  std::unordered_map<std::string, int> next_suffix; // per base id: a thousand "dup"s stay linear
  for (size_t i = 0; i < calls.size(); ++i) {
    auto& id = calls[i].id;
    if (id.empty() || taken.count(id) > 0) {
      auto base = id.empty() ? generated_id(reply, i) : id;
      id = base;
      for (auto& n = next_suffix.try_emplace(base, 2).first->second; taken.count(id) > 0; ++n)
        id = base + "_" + std::to_string(n);
    }
    taken.insert(id);
  }
  reply.tool_calls = std::move(calls);
}

void on_reply(step_ptr self, model_reply& reply);

void generate(step_ptr self, model_request request) {
  auto sent = std::chrono::steady_clock::now();
  auto waited = [=] {
    self->state.outcome.api_ms += std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::steady_clock::now() - sent)
                                    .count();
  };
  // The shell (bwrap, bash: ~10 ms of CPU) starts with the first request, so that it is ready
  // when a model that answers at once asks for a command (a run's top-level agent has one
  // started ahead, at its launch, which the executor takes here: tools/shell.hpp's
  // shell_ahead). Asked for before the request is handed over: a worker
  // runs the actors its own messages woke last-in first-out, so the model client sends the
  // request before the executor spends ~1 ms spawning the sandbox on the same worker.
  if (!std::exchange(self->state.shell_started, true) && self->state.executor)
    self->send(self->state.executor, start_atom::value);
  self->request(self->state.model, caf::infinite, generate_atom::value, std::move(request))
    .then([=](model_reply& reply) {
            waited();
            on_reply(self, reply);
          },
          [=](caf::error& err) {
            waited();
            model_reply failed;
            failed.error = model_error_kind::transport;
            failed.error_message = "model client failed: " + self->system().render(err);
            on_reply(self, failed);
          });
}

// A reply that ends at the output limit while it has native calls was cut in its last call
// (a finished call would have ended it with tool_use): that call is dropped, never run
// half-formed. Returns the dropped call's tool name.
std::string drop_cut_call(model_reply& reply) {
  auto& calls = reply.assistant.tool_calls;
  if (calls.empty() || calls.back().format != call_format::native)
    return {};
  auto name = calls.back().name;
  calls.pop_back();
  return name;
}

// Asks the model to go on from where the output limit cut its reply. The request is the
// step's, plus the reply so far (text only: native calls would need their results right
// after them) and an instruction.
void continue_reply(step_ptr self, const std::string& cut_call) {
  auto& st = self->state;
  const auto& so_far = *st.partial;
  auto text_only = std::make_shared<message>();
  text_only->id = so_far.id;
  text_only->role = role::assistant;
  text_only->content = so_far.content;
  auto next = st.request;
  next.context.messages.push_back(std::move(text_only));
  next.context.messages.push_back(std::make_shared<message>(continuation_prompt(so_far, cut_call)));
  generate(self, std::move(next));
}

// Adds a piece of a cut reply to the pieces before it: texts concatenated, calls in order.
void join(std::optional<message>& partial, message piece) {
  if (!partial) {
    partial = std::move(piece);
    return;
  }
  partial->content += piece.content;
  for (auto& call : piece.tool_calls)
    partial->tool_calls.push_back(std::move(call));
}

void on_reply(step_ptr self, model_reply& reply) {
  auto& st = self->state;
  st.outcome.usage += reply.usage;
  if (reply.error == model_error_kind::interrupted || (st.interrupted && !reply.ok())) {
    st.partial.reset();
    finish_step(self, step_status::interrupted);
    return;
  }
  if (!reply.ok()) {
    st.partial.reset();
    st.outcome.error = reply.error;
    st.outcome.error_message = reply.error_message;
    finish_step(self, step_status::failed);
    return;
  }
  if (reply.stop_reason == "max_tokens" || st.partial) {
    bool cut = reply.stop_reason == "max_tokens";
    auto cut_call = cut ? drop_cut_call(reply) : std::string{};
    join(st.partial, std::move(reply.assistant));
    if (cut && st.outcome.continuations < max_continuations && !st.interrupted) {
      ++st.outcome.continuations;
      continue_reply(self, cut_call);
      return;
    }
    st.outcome.unfinished_call = cut_call;
    reply.assistant = std::move(*st.partial);
    st.partial.reset();
  }
  auto& msg = reply.assistant;
  msg.role = role::assistant;
  if (msg.id.empty())
    msg.id = new_message_id();
  if (msg.timestamp_ms == 0)
    msg.timestamp_ms = now_ms();
  collect_calls(st, msg);
  st.outcome.reply = msg;
  st.next_call = 0;
  st.phase = step_phase::running_tools;
  // No tool runs before the session has the reply on disk and its hooks have seen it.
  self->request(st.session, caf::infinite, reply_atom::value, std::move(msg))
    .then(
      [=](bool proceed) {
        if (!proceed)
          self->state.interrupted = true;
        run_next_call(self);
      },
      [=](caf::error&) {
        self->state.interrupted = true;
        run_next_call(self);
      });
}

// Takes an MCP server's report (a newer revision replaces the one held).
void take_mcp_report(step_ptr self, mcp_server_report report) {
  auto& st = self->state;
  auto [held, added] = st.mcp_reports.try_emplace(report.server, report);
  if (!added) {
    if (held->second.revision >= report.revision)
      return;
    held->second = std::move(report);
  }
  st.mcp_changed = true;
}

// Offers the tools of the MCP servers' latest reports beside the registry's, when a report
// changed them since the last step.
void refresh_mcp_tools(step_state& st) {
  if (!st.mcp_changed)
    return;
  st.mcp_changed = false;
  auto tools = st.base_registry->tools();
  for (auto& [name, report] : st.mcp_reports)
    if (report.status == mcp_status::connected)
      for (auto& tool : *report.tools)
        // A tool a bare deny rule names is not offered at all, as with the built-in ones.
        if (!st.permissions || !st.permissions->removes_tool(mcp_tool_name(name, tool.name)))
          tools.push_back(mcp_tool_spec(name, tool));
  st.config.registry = std::make_shared<const tool_registry>(std::move(tools));
  st.tools = st.config.registry->descriptors();
}

// Waits for the servers still starting before the step's model request (their own start-up
// timers bound it); returns false when none is, and the request can go now.
bool wait_for_mcp_servers(step_ptr self) {
  auto& st = self->state;
  std::vector<mcp_server_actor> starting;
  for (auto& [name, report] : st.mcp_reports)
    if (report.status == mcp_status::pending)
      if (auto server = st.config.mcp_servers.find(name); server != st.config.mcp_servers.end())
        starting.push_back(server->second);
  if (starting.empty())
    return false;
  st.mcp_waiting = starting.size();
  auto serial = ++st.mcp_wait_serial;
  auto answered = [=] {
    auto& s = self->state;
    if (serial != s.mcp_wait_serial || --s.mcp_waiting > 0)
      return;
    refresh_mcp_tools(s);
    s.request.tools = s.tools;
    generate(self, s.request);
  };
  for (auto& server : starting)
    self->request(server, caf::infinite, list_atom::value, int64_t{-1})
      .then(
        [=](mcp_server_report& report) {
          take_mcp_report(self, std::move(report));
          answered();
        },
        [=](caf::error&) { answered(); });
  return true;
}

step_actor::behavior_type step_behavior(step_ptr self, step_config config, session_actor session,
                                        model_client_actor model, tool_executor_actor executor) {
  auto& st = self->state;
  st.tools = config.registry->descriptors();
  st.config = std::move(config);
  if (st.config.permissions)
    st.permissions = *st.config.permissions;
  st.session = std::move(session);
  st.model = std::move(model);
  st.executor = std::move(executor);
  st.base_registry = st.config.registry;
  // Each server's state before any step: a step request waits behind these answers, which a
  // server gives at once (it never blocks).
  for (auto& [name, server] : st.config.mcp_servers)
    self->request(server, caf::infinite, subscribe_atom::value, mcp_listener_actor{self})
      .await([=](mcp_server_report& report) { take_mcp_report(self, std::move(report)); },
             [](caf::error&) {});
  return {
    [=](step_atom, step_request& request) -> caf::result<step_outcome> {
      auto& s = self->state;
      if (s.phase != step_phase::idle) {
        step_outcome busy;
        busy.status = step_status::failed;
        busy.error = model_error_kind::request;
        busy.error_message = "a step is already running for this session";
        return busy;
      }
      refresh_mcp_tools(s);
      s.promise = self->make_response_promise<step_outcome>();
      s.outcome = step_outcome{};
      s.interrupted = false;
      if (request.permission_mode >= 0 && s.permissions)
        s.permissions->mode = static_cast<permission_mode>(request.permission_mode);
      s.partial.reset();
      s.call_notes.clear();
      s.updated_inputs.clear();
      s.hook_stop.reset();
      s.phase = step_phase::generating;
      s.request = model_request{s.config.system_prompt, std::move(request.context), s.tools};
      if (!wait_for_mcp_servers(self))
        generate(self, s.request);
      return s.promise;
    },
    [=](compact_atom, model_request& request) -> caf::result<model_reply> {
      auto& s = self->state;
      if (s.phase != step_phase::idle) {
        model_reply busy;
        busy.error = model_error_kind::request;
        busy.error_message = "cannot compact while a step is running";
        return busy;
      }
      s.phase = step_phase::compacting;
      s.interrupted = false;
      s.compaction = self->make_response_promise<model_reply>();
      auto deliver = [=](model_reply reply) {
        auto& state = self->state;
        state.phase = step_phase::idle;
        state.compaction.deliver(std::move(reply));
      };
      self->request(s.model, caf::infinite, generate_atom::value, std::move(request))
        .then([=](model_reply& reply) { deliver(std::move(reply)); },
              [=](caf::error& err) {
                model_reply failed;
                failed.error = model_error_kind::transport;
                failed.error_message = "model client failed: " + self->system().render(err);
                deliver(std::move(failed));
              });
      return s.compaction;
    },
    [=](mcp_server_report& report) { take_mcp_report(self, std::move(report)); },
    [=](interrupt_atom) {
      auto& s = self->state;
      if (s.phase == step_phase::idle)
        return;
      s.interrupted = true;
      if (s.mcp_waiting > 0) {
        // Still waiting for servers to start: no model call to cancel, the step just ends.
        s.mcp_waiting = 0;
        ++s.mcp_wait_serial;
        finish_step(self, step_status::interrupted);
        return;
      }
      if (s.asking) {
        // Nobody waits for the answer: the call and the rest are answered as interrupted.
        s.asking = false;
        run_next_call(self);
        return;
      }
      if (s.hooking) {
        // Hooks around a call are not waited for: results in hand are logged as they are, the
        // rest answered as interrupted.
        s.hooking = false;
        if (s.batch.empty() || s.batch_pending > 0)
          run_next_call(self);
        else
          log_batch(self);
        return;
      }
      // Normal priority on purpose: a cancel must not overtake the request it cancels.
      if (s.phase == step_phase::generating || s.phase == step_phase::compacting)
        self->send(s.model, cancel_atom::value);
      else
        self->send(s.executor, cancel_atom::value);
    },
    [=](generation_progress& progress) {
      // A summary being written is not the assistant speaking: only retries are shown.
      if (self->state.phase == step_phase::compacting && progress.kind == progress_kind::text_delta)
        return;
      self->send(self->state.session, std::move(progress));
    },
  };
}

} // namespace

step_actor spawn_step(caf::actor_system& sys, step_config config, session_actor session,
                      model_client_actor model, tool_executor_actor executor) {
  return sys.spawn(step_behavior, std::move(config), std::move(session), std::move(model),
                   std::move(executor));
}

} // namespace troupe
