#include "orchestrator/renderer.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace troupe {

namespace {

struct renderer_state {
  output_format format = output_format::text;
  std::FILE* out = nullptr;
  std::function<void(const session_ended_event&)> on_end;
};

using self_ptr = event_sink_actor::stateful_pointer<renderer_state>;

template <class Event>
void print(self_ptr self, const Event& event) {
  auto& st = self->state;
  std::string text;
  if (st.format == output_format::stream_json) {
    auto line = to_stream_json(event);
    if (line.is_null())
      return;
    text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  } else {
    text = to_text(event);
  }
  std::fwrite(text.data(), 1, text.size(), st.out);
  std::fflush(st.out);
}

event_sink_actor::behavior_type renderer(self_ptr self, output_format format, std::FILE* out,
                                         std::function<void(const session_ended_event&)> on_end) {
  self->state.format = format;
  self->state.out = out;
  self->state.on_end = std::move(on_end);
  return {
    [=](const session_started_event& e) { print(self, e); },
    [=](const message_event& e) { print(self, e); },
    [=](const notice_event& e) { print(self, e); },
    [=](const session_ended_event& e) {
      print(self, e);
      if (self->state.on_end)
        self->state.on_end(e);
      self->quit();
    },
  };
}

} // namespace

event_sink_actor spawn_renderer(caf::actor_system& sys, output_format format, std::FILE* out,
                                std::function<void(const session_ended_event&)> on_end) {
  return sys.spawn(renderer, format, out, std::move(on_end));
}

} // namespace troupe
