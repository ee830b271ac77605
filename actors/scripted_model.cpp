#include "actors/scripted_model.hpp"

#include <chrono>
#include <unordered_map>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "store/ids.hpp"

namespace troupe {

namespace {

struct scripted_model_state {
  script lines;
  size_t next = 0;
  uint64_t next_delay_id = 0;
  /// Replies held back by delay_ms, answered when due or cancelled.
  std::unordered_map<uint64_t, std::pair<caf::typed_response_promise<model_reply>, model_reply>>
    delayed;
};

using self_ptr = model_client_actor::stateful_pointer<scripted_model_state>;

model_reply exhausted_reply(const script& lines) {
  model_reply reply;
  reply.error = model_error_kind::script;
  reply.error_message = "the scripted model has no reply left: " + lines.source + " has " +
                        std::to_string(lines.replies.size()) +
                        " replies and the run asked for another; add lines to the script";
  return reply;
}

model_reply interrupted_reply() {
  model_reply reply;
  reply.error = model_error_kind::interrupted;
  reply.error_message = "generation interrupted";
  return reply;
}

model_client_actor::behavior_type scripted_model(self_ptr self, script lines) {
  self->state.lines = std::move(lines);
  return {
    [=](generate_atom, const model_request&) -> caf::result<model_reply> {
      auto& st = self->state;
      if (st.next >= st.lines.replies.size())
        return exhausted_reply(st.lines);
      const auto& line = st.lines.replies[st.next++];
      auto reply = to_model_reply(line);
      if (reply.ok()) {
        reply.assistant.id = new_message_id();
        reply.assistant.timestamp_ms = now_ms();
      }
      if (line.delay_ms == 0)
        return reply;
      auto id = st.next_delay_id++;
      auto promise = self->make_response_promise<model_reply>();
      st.delayed.emplace(id, std::make_pair(promise, std::move(reply)));
      self->delayed_send(self, std::chrono::milliseconds{line.delay_ms}, due_atom::value, id);
      return promise;
    },
    [=](cancel_atom) {
      for (auto& [id, pending] : self->state.delayed)
        pending.first.deliver(interrupted_reply());
      self->state.delayed.clear();
    },
    [=](due_atom, uint64_t id) {
      auto i = self->state.delayed.find(id);
      if (i == self->state.delayed.end())
        return; // cancelled meanwhile
      i->second.first.deliver(std::move(i->second.second));
      self->state.delayed.erase(i);
    },
  };
}

} // namespace

model_client_actor spawn_scripted_model(caf::actor_system& sys, script lines) {
  return sys.spawn(scripted_model, std::move(lines));
}

} // namespace troupe
