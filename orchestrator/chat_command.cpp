#include "orchestrator/chat_command.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/runtime.hpp"
#include "orchestrator/chat_front.hpp"
#include "orchestrator/permission_prompt.hpp"
#include "orchestrator/renderer.hpp"
#include "store/session_catalog.hpp"
#include "orchestrator/signals.hpp"

namespace troupe {

namespace {

// Asks at the chat's prompt: the question goes to the main thread, which answers it later with
// a message; the asker never blocks, so a question withdrawn (its step interrupted) holds up no
// other.
struct chat_asker_state {
  uint64_t next = 0;
  std::map<uint64_t, caf::typed_response_promise<permission_verdict>> pending;
};

deferred_asker_actor spawn_chat_asker(caf::actor_system& sys, std::shared_ptr<chat_mailbox> box) {
  return sys.spawn([box](deferred_asker_actor::stateful_pointer<chat_asker_state> self)
                       -> deferred_asker_actor::behavior_type {
    return {
        [=](ask_atom, const tool_call& call,
            const std::string& reason) -> caf::result<permission_verdict> {
          if (box->closed())
            return permission_verdict{};
          auto id = ++self->state.next;
          auto promise = self->make_response_promise<permission_verdict>();
          self->state.pending.emplace(id, promise);
          chat_item item;
          item.what = chat_item::kind::ask;
          item.text = permission_question(call, reason);
          item.ask_id = id;
          box->push(std::move(item));
          return promise;
        },
        [=](ask_atom, uint64_t id, permission_answer answer) {
          auto it = self->state.pending.find(id);
          if (it == self->state.pending.end())
            return;
          permission_verdict verdict;
          verdict.answer = answer;
          it->second.deliver(verdict);
          self->state.pending.erase(it);
        },
    };
  });
}

/// How long the chat's exit may wait for threads once the session has ended.
constexpr std::chrono::seconds chat_shutdown_grace{2};

// The chat itself, to its end: the actor system and the session's lock are gone when it returns.
int chat_until_end(run_settings settings) {
  block_termination_signals();
  if (settings.http_model)
    http_engine::warm_up(settings.libcurl, settings.http_model->provider.base_url);
  bool terminal = ::isatty(STDIN_FILENO) != 0 && ::isatty(STDOUT_FILENO) != 0;
  // Outlives the actor system: once the session has ended, what its tools left goes too.
  process_reaper reaper;
  warn_without_subreaper(reaper);
  caf::actor_system_config cfg;
  configure_actor_system(cfg);
  caf::actor_system sys{cfg};
  auto box = std::make_shared<chat_mailbox>();
  settings.interactive = true;
  auto first_prompt = std::exchange(settings.prompt, {}); // the front end sends it
  // The chat keeps the idle timeout itself: a person typing is not idle, whatever the session
  // sees.
  auto idle_timeout = std::exchange(settings.idle_timeout, std::chrono::milliseconds{0});
  auto asker = spawn_chat_asker(sys, box);
  auto launched = launch_agent(sys, settings, asker);
  if (!launched) {
    std::fprintf(stderr, "troupe: %s\n", launched.error().c_str());
    return 2;
  }
  auto agent = launched->agent;
  render_options options;
  options.colour = colour_wanted(STDOUT_FILENO);
  options.echo_prompts = false; // what the person typed is on the screen already
  render_sink sink;
  sink.write = [box](std::string_view text) {
    chat_item item;
    item.text = std::string{text};
    box->push(std::move(item));
    return true;
  };
  sink.on_status = [box](const session_status_event& status) {
    chat_item item;
    item.what = chat_item::kind::status;
    item.status = status;
    box->push(std::move(item));
  };
  sink.on_end = [box](const session_ended_event& ended) {
    chat_item item;
    item.what = chat_item::kind::ended;
    item.ended = ended;
    box->push(std::move(item));
  };
  auto renderer = spawn_renderer(sys, options, std::move(sink), agent);
  signal_forwarder forwarder{[box](int sig) {
    chat_item item;
    item.what = chat_item::kind::signal;
    item.signal = sig;
    box->push(std::move(item));
  }};
  auto style = text_style::make(options.colour);
  caf::anon_send(agent, subscribe_atom::value, renderer);
  caf::anon_send(agent, start_atom::value);
  // The working line redraws itself in place: only where stdout is a terminal that can.
  const char* term = std::getenv("TERM");
  bool show_working =
    ::isatty(STDOUT_FILENO) != 0 && (term == nullptr || std::strcmp(term, "dumb") != 0);
  int code = run_chat_front({agent, asker, box, terminal, style, settings.troupe_home / "history",
                             idle_timeout, first_prompt, show_working});
  launched->stop_engine();
  // The session has ended: a tool's scan that cannot be cut does not keep the chat open.
  exit_if_still_running_after(chat_shutdown_grace, code, stdout);
  return code;
}

bool empty_file(const std::filesystem::path& path) {
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  return ec || size == 0;
}

} // namespace

int execute_chat(run_settings settings) {
  auto session = session_paths::top_level(settings.troupe_home, settings.session_id);
  bool created = settings.created_session_dir;
  int code = chat_until_end(std::move(settings));
  // A chat left before a word was said leaves no session behind for `troupe ls` to list
  // (unless news for it arrived meanwhile, or it was given a name).
  if (created && empty_file(session.transcript()) && empty_file(session.queue()) &&
      read_session(session).info.name_source != "user") {
    std::error_code ec;
    std::filesystem::remove_all(session.dir(), ec);
  }
  return code;
}

} // namespace troupe
