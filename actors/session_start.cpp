// A session's start: its transcript replayed into the context, its files opened, the
// SessionStart hooks, crash recovery, the durable queue, then the first input.

#include <algorithm>
#include <functional>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include "store/ids.hpp"
#include "actors/session_state.hpp"
#include "context/compaction.hpp"
#include "tools/tool_spec.hpp"

namespace troupe {

namespace {

// The calls of the last assistant message that no tool message answers.
std::vector<tool_call> unanswered_calls(const std::vector<message_ptr>& log) {
  auto last =
      std::find_if(log.rbegin(), log.rend(), [](auto& m) { return m->role == role::assistant; });
  if (last == log.rend())
    return {};
  std::vector<tool_call> open = (*last)->tool_calls;
  for (auto it = last.base(); it != log.end(); ++it)
    if ((*it)->role == role::tool)
      open.erase(std::remove_if(open.begin(), open.end(),
                                [&](auto& c) { return c.id == (*it)->tool_call_id; }),
                 open.end());
  return open;
}

} // namespace

void begin_session(session_ptr self) {
  auto& st = self->state;
  if (st.begun)
    return;
  st.begun = true;
  auto transcript_path = st.config().paths().transcript();
  auto writer = transcript_writer::open(transcript_path);
  st.window = context_window{st.current_model.budget};
  auto fixed = estimate_tokens(*st.current_model.system_prompt);
  if (st.current_model.format == tool_format::tool)
    fixed += estimate_tokens(st.config().registry->descriptors());
  st.window.set_fixed_tokens(fixed);
  // The whole transcript is kept; the model is sent what follows its last boundary.
  for (auto& m : std::exchange(st.history, {})) {
    st.log.push_back(std::make_shared<const message>(std::move(m)));
    st.window.append(st.log.back());
  }
  if (st.config().resumed_state) {
    st.state = *st.config().resumed_state;
    st.state.step_count = 0;
  }
  st.state.messages_count = static_cast<int64_t>(st.log.size());
  for (auto it = st.log.rbegin(); it != st.log.rend(); ++it)
    if ((*it)->role == role::assistant) {
      st.last_assistant_text = (*it)->content;
      break;
    }
  publish(self,
          session_started_event{st.config().session_id, st.config().cwd.string(), st.current_model.name,
                                st.config().registry->names(), transcript_path.string(),
                                static_cast<int64_t>(st.log.size()), st.config().memory_files});
  auto state_file = json_file::open(st.config().paths().state(), st.config().keep_state_files_open);
  auto info_file = json_file::open(st.config().paths().info(), st.config().keep_state_files_open);
  if (!writer || !state_file || !info_file) {
    end_session(self, terminal_reason::error,
                !writer       ? writer.error()
                : !state_file ? state_file.error()
                              : info_file.error());
    return;
  }
  st.transcript = std::move(*writer);
  st.state_file = std::move(*state_file);
  st.info_file = std::move(*info_file);
  st.info = st.config().info;
  st.info.id = st.config().session_id;
  st.info.cwd = st.config().cwd.string();
  st.info.state = "running";
  if (st.info.created_ms == 0)
    st.info.created_ms = now_ms();
  // A session that died in its first turn never had its info written: its transcript tells.
  if (st.info.first_prompt.empty())
    for (auto& m : st.log)
      if (m->role == role::user && m->origin == message_origin::prompt) {
        st.info.first_prompt = m->content.substr(0, 200);
        break;
      }
  save_info(self);
  save_state(self); // never an empty state.json, even if the process dies before a step
  for (auto& m : st.log)
    if (m->origin == message_origin::task_notification)
      st.inbox.mark_logged_before(m->id);
  for (auto& m : fire(self, hook_point::session_start))
    if (!append_message(self, std::move(m)))
      return;
  // Crash recovery: calls of the last reply that never got a result are answered as lost
  // (a provider rejects an unanswered call), and a transcript ending with the user's message
  // or with tool results is answered before any new input.
  for (auto& lost : unanswered_calls(st.log))
    if (!append_message(self,
                        make_tool_message(lost, error_result("[no result: the session stopped "
                                                             "before this call finished]"))))
      return;
  auto last = std::find_if(st.log.rbegin(), st.log.rend(),
                           [](const message_ptr& m) { return !is_bookkeeping(*m); });
  bool unanswered = last != st.log.rend() && awaits_answer(**last);
  // External SessionStart hooks add their context first (it is not a message to answer).
  // Until they and the durable queue are done, the session stays `created`: inputs and news
  // queue up.
  run_hooks(
      self, hook_event::session_start, {{"source", st.log.empty() ? "startup" : "resume"}},
      [=](const hook_outcome& hook) {
        if (!log_hook_context(self, hook_event::session_start, hook.additional_context))
          return;
        queue_hook_messages(self, hook);
        enter_loop(self, unanswered);
      },
      hook_wait::session_start(unanswered)); // interrupted: the turn the loop starts stops
}

// Reads what waits in the durable queue, then takes the first input of the session.
void enter_loop(session_ptr self, bool unanswered) {
  // Notifications that came while the session was not running are inputs like any other, read
  // first.
  read_durable_queue(self, true, [=](size_t) {
    if (self->state.phase != session_phase::created)
      return; // ended meanwhile
    first_turn(self, unanswered);
  });
}

} // namespace troupe
