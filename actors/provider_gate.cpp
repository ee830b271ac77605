#include "actors/provider_gate.hpp"

#include <chrono>
#include <map>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

namespace troupe {

namespace {

using clock_type = std::chrono::steady_clock;

struct paused_provider {
  clock_type::time_point until;
  std::vector<caf::typed_response_promise<bool>> waiting;
};

struct provider_gate_state {
  std::map<std::string, paused_provider> paused;
};

using self_ptr = provider_gate_actor::stateful_pointer<provider_gate_state>;

provider_gate_actor::behavior_type provider_gate(self_ptr self) {
  return {
    [=](admit_atom, const std::string& provider) -> caf::result<bool> {
      auto at = self->state.paused.find(provider);
      if (at == self->state.paused.end())
        return true;
      auto promise = self->make_response_promise<bool>();
      at->second.waiting.push_back(promise);
      return promise;
    },
    [=](pause_atom, const std::string& provider, int64_t delay_ms) {
      auto until = clock_type::now() + std::chrono::milliseconds{delay_ms};
      auto [at, fresh] = self->state.paused.try_emplace(provider);
      if (!fresh && at->second.until >= until)
        return;
      at->second.until = until;
      spdlog::info("{} asked for a pause: every request to it waits {} ms", provider, delay_ms);
      if (fresh) // one timer per pause: it looks again at its end
        self->delayed_send(self, std::chrono::milliseconds{delay_ms}, due_atom::value, provider);
    },
    [=](due_atom, const std::string& provider) {
      auto at = self->state.paused.find(provider);
      if (at == self->state.paused.end())
        return;
      // A longer pause set since, or a timer that fired a hair early: wait for the rest.
      auto now = clock_type::now();
      if (at->second.until > now) {
        self->delayed_send(self, at->second.until - now, due_atom::value, provider);
        return;
      }
      for (auto& waiting : at->second.waiting)
        waiting.deliver(true);
      self->state.paused.erase(at);
    },
  };
}

} // namespace

provider_gate_actor spawn_provider_gate(caf::actor_system& sys) {
  return sys.spawn(provider_gate);
}

} // namespace troupe
