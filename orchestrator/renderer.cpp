#include "orchestrator/renderer.hpp"

#include <chrono>
#include <cstdio>
#include <type_traits>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace troupe {

namespace {

struct renderer_state {
  render_options options;
  text_style style;
  /// The current reply's text was printed as it streamed in.
  bool streamed = false;
  render_sink sink;
  session_actor session;
  bool output_closed = false;
  bool ended = false;
  /// The session rendered (its first event's): events of its subagents (watch_subagents) show
  /// their messages only.
  std::string session_id;
  /// When rendering began: the duration of a session that went without telling its end.
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};

using self_ptr = event_sink_actor::stateful_pointer<renderer_state>;

nlohmann::json stream_json_of(const renderer_state& st, const generation_progress& e) {
  return to_stream_json(e, st.options.include_partial_messages);
}

template <class Event>
nlohmann::json stream_json_of(const renderer_state&, const Event& e) {
  return to_stream_json(e);
}

std::string text_of(renderer_state& st, const generation_progress& e) {
  if (e.kind == progress_kind::text_delta) {
    auto prefix = st.streamed ? "" : "\n";
    st.streamed = true;
    return prefix + to_text(e, st.style);
  }
  return to_text(e, st.style);
}

std::string text_of(renderer_state& st, const message_event& e) {
  if (!st.options.echo_prompts && e.msg.role == role::user && e.msg.origin == message_origin::prompt)
    return {};
  bool streamed = e.msg.role == role::assistant && std::exchange(st.streamed, false);
  return to_text(e, streamed, st.style);
}

template <class Event>
std::string text_of(renderer_state& st, const Event& e) {
  return to_text(e, st.style);
}

template <class Event>
void print(self_ptr self, const Event& event) {
  auto& st = self->state;
  std::string text;
  // json: the result line and nothing else, the same object stream-json ends with.
  if constexpr (!std::is_same_v<Event, session_ended_event>)
    if (st.options.format == output_format::json)
      return;
  if (st.options.format != output_format::text) {
    auto line = stream_json_of(st, event);
    if (line.is_null())
      return;
    if constexpr (std::is_same_v<Event, session_started_event>)
      for (auto& [key, value] : st.options.init_extras.items()) {
        if (key == "mcp_tools" && line["tools"].is_array()) { // the servers' beside troupe's own
          for (auto& name : value)
            line["tools"].push_back(name);
        } else {
          line[key] = value;
        }
      }
    if (st.options.claude_names)
      use_claude_names(line);
    text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  } else if (st.options.answer_only) {
    return; // only the answer, at the end
  } else {
    text = text_of(st, event);
  }
  if (st.output_closed || text.empty())
    return;
  if (!st.sink.write(text)) {
    st.output_closed = true;
    self->send<caf::message_priority::high>(st.session, interrupt_atom::value);
  }
}

void finish(self_ptr self, const session_ended_event& e) {
  auto& st = self->state;
  if (st.ended)
    return;
  st.ended = true;
  // A client that reads a result per turn has its turns' results; an end outside any turn
  // still says so when it is a failure (a start-up error, a crash).
  bool own_result = !st.options.report_turns ||
                    (!e.turn_reported && e.reason != terminal_reason::completed &&
                     e.reason != terminal_reason::backgrounded);
  if (st.options.answer_only && st.options.format == output_format::text) {
    auto answer = printable(e.result_text);
    if (!answer.empty() && answer.back() != '\n')
      answer += "\n";
    if (!answer.empty() && !st.sink.write(answer))
      st.output_closed = true;
    if (!e.error_message.empty())
      std::fprintf(stderr, "troupe: error: %s\n", printable(e.error_message).c_str());
    else if (e.reason != terminal_reason::completed && e.reason != terminal_reason::backgrounded)
      std::fprintf(stderr, "troupe: the run ended %s%s\n", to_string(e.reason),
                   e.permission_denials.empty()
                     ? ""
                     : printable(": " + e.permission_denials.back().tool_name + " was refused: " +
                                 e.permission_denials.back().reason)
                         .c_str());
  } else if (own_result) {
    print(self, e);
  }
  if (st.sink.on_end)
    st.sink.on_end(e);
  self->quit();
}

// An event of a subagent the renderer watches, not of its own session.
template <class Event>
bool foreign(self_ptr self, const Event& e) {
  auto& st = self->state;
  if (st.session_id.empty())
    st.session_id = e.session_id;
  return e.session_id != st.session_id;
}

event_sink_actor::behavior_type renderer(self_ptr self, render_options options, render_sink sink,
                                         session_actor session) {
  self->state.options = options;
  self->state.style = text_style::make(options.colour);
  self->state.sink = std::move(sink);
  self->state.session = session;
  self->monitor(session);
  self->set_down_handler([=](caf::down_msg& down) {
    auto& st = self->state;
    session_ended_event lost; // what it did is in its transcript and session.json
    lost.session_id = st.session_id;
    lost.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::steady_clock::now() - st.started)
                         .count();
    if (down.reason == caf::exit_reason::kill) {
      // Only a second interrupt kills a session (`run`): said as what it was, not as a fault.
      lost.reason = terminal_reason::interrupted;
      lost.error_message = "stopped at a second interrupt, before the session had finished";
    } else {
      lost.reason = terminal_reason::error;
      lost.error_message =
        "the session stopped without finishing: " + self->system().render(down.reason);
    }
    finish(self, lost);
  });
  return {
    [=](const session_started_event& e) {
      if (!foreign(self, e))
        print(self, e);
    },
    [=](const message_event& e) {
      if (!foreign(self, e)) {
        print(self, e);
      } else if (!e.parent_tool_use_id.empty()) {
        // A subagent's message, as Claude Code streams it: under its parent's session id,
        // tied to the task call that launched it.
        auto relayed = e;
        relayed.session_id = self->state.session_id;
        print(self, relayed);
      }
    },
    [=](const notice_event& e) {
      if (!foreign(self, e))
        print(self, e);
    },
    [=](const generation_progress& e) {
      if (!foreign(self, e))
        print(self, e);
    },
    [=](const session_status_event& e) {
      if (!foreign(self, e) && self->state.sink.on_status)
        self->state.sink.on_status(e);
    },
    [=](const hook_run_event& e) {
      if (!foreign(self, e))
        print(self, e);
    },
    [=](const turn_ended_event& e) {
      if (!self->state.options.report_turns || foreign(self, e.summary))
        return;
      print(self, e.summary);
      if (self->state.sink.on_turn)
        self->state.sink.on_turn(e.summary);
    },
    [=](const session_ended_event& e) {
      if (!foreign(self, e))
        finish(self, e);
    },
  };
}

} // namespace

render_sink stream_sink(std::FILE* out, std::function<void(const session_ended_event&)> on_end) {
  render_sink sink;
  sink.write = [out](std::string_view text) {
    return std::fwrite(text.data(), 1, text.size(), out) == text.size() && std::fflush(out) == 0;
  };
  sink.on_end = std::move(on_end);
  return sink;
}

event_sink_actor spawn_renderer(caf::actor_system& sys, render_options options, render_sink sink,
                                session_actor session) {
  return sys.spawn(renderer, options, std::move(sink), std::move(session));
}

} // namespace troupe
