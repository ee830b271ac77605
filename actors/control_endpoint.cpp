#include "actors/control_endpoint.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <nlohmann/json.hpp>

#include "actors/ids.hpp"
#include "protocol/bounded_json.hpp"
#include "tools/tool_spec.hpp"

namespace troupe {

namespace {

struct endpoint_state {
  session_actor session;
  std::string token;
  std::filesystem::path file;
};

using self_ptr = control_endpoint_actor::stateful_pointer<endpoint_state>;

// Constant time: a wrong token takes as long whatever its prefix.
bool same_token(const std::string& a, const std::string& b) {
  if (a.size() != b.size())
    return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

control_endpoint_actor::behavior_type endpoint(self_ptr self, session_actor session,
                                               std::string token, std::filesystem::path file) {
  self->state.session = session;
  self->state.token = std::move(token);
  self->state.file = std::move(file);
  self->monitor(session);
  // The session is gone: so is the endpoint, its file and its port (port 0: every port).
  self->set_down_handler([=](caf::down_msg&) {
    std::error_code ec;
    std::filesystem::remove(self->state.file, ec);
    self->system().middleman().unpublish(caf::actor_cast<caf::actor>(self), 0);
    self->quit();
  });
  return {
    [=](control_atom, const std::string& given, const std::string& command,
        const std::string& arg) -> caf::result<std::string> {
      auto& st = self->state;
      if (!same_token(given, st.token))
        return std::string{"refused: wrong token"};
      auto promise = self->make_response_promise<std::string>();
      self->request(st.session, std::chrono::seconds{5}, control_atom::value, command, arg)
        .then([=](const std::string& answer) mutable { promise.deliver(answer); },
              [=](caf::error& err) mutable {
                promise.deliver("error: the session did not answer: " +
                                self->system().render(err));
              });
      return promise;
    },
  };
}

} // namespace

expected<control_endpoint_actor> spawn_control_endpoint(caf::actor_system& sys,
                                                        session_actor session,
                                                        const std::filesystem::path& session_dir) {
  auto token = secret_hex(32);
  auto file = session_dir / "control.json";
  auto actor = sys.spawn(endpoint, session, token, file);
  auto port = sys.middleman().publish(actor, 0, "127.0.0.1");
  if (!port) {
    caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
    return failure{"cannot open the control endpoint: " + sys.render(port.error())};
  }
  std::error_code ec;
  std::filesystem::create_directories(session_dir, ec);
  // Written aside with mode 0600, then renamed: a reader sees no file or the whole of it,
  // and nobody else can read the token.
  auto temp = session_dir / ("control.json." + random_hex(6));
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    sys.middleman().unpublish(caf::actor_cast<caf::actor>(actor), *port);
    caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
    return failure{"cannot write " + file.string() + ": " + std::strerror(errno)};
  }
  auto text = nlohmann::json{{"port", *port}, {"token", token}, {"pid", ::getpid()}}.dump() + "\n";
  auto written = ::write(fd, text.data(), text.size());
  ::close(fd);
  if (written != static_cast<ssize_t>(text.size())) {
    std::filesystem::remove(temp, ec);
    return failure{"cannot write " + file.string()};
  }
  std::filesystem::rename(temp, file, ec);
  return actor;
}

expected<control_file> read_control_file(const std::filesystem::path& session_dir) {
  std::string text;
  auto path = session_dir / "control.json";
  if (!read_whole_file(path, text).empty())
    return failure{"no control endpoint (" + path.string() + " is missing)"};
  auto parsed = parse_json_bounded(text);
  auto json = parsed ? std::move(*parsed) : nlohmann::json{};
  if (!json.is_object() || !json.contains("port") || !json.contains("token"))
    return failure{path.string() + " is not a control file"};
  control_file file;
  file.port = json.value("port", uint16_t{0});
  file.token = json.value("token", std::string{});
  file.pid = json.value("pid", int64_t{0});
  return file;
}

expected<std::string> send_control(caf::actor_system& sys,
                                   const std::filesystem::path& session_dir,
                                   const std::string& command, const std::string& arg,
                                   std::chrono::milliseconds timeout) {
  auto file = read_control_file(session_dir);
  if (!file)
    return failure{file.error()};
  if (file->pid > 0 && ::kill(static_cast<pid_t>(file->pid), 0) < 0 && errno == ESRCH)
    return failure{"the session's process (pid " + std::to_string(file->pid) +
                   ") is not running"};
  auto endpoint = sys.middleman().remote_actor<control_endpoint_actor>("127.0.0.1", file->port);
  if (!endpoint)
    return failure{"cannot reach the session on 127.0.0.1:" + std::to_string(file->port) + ": " +
                   sys.render(endpoint.error())};
  caf::scoped_actor self{sys};
  expected<std::string> answer = failure{"no answer"};
  self->request(*endpoint, timeout, control_atom::value, file->token, command, arg)
    .receive([&](const std::string& reply) { answer = reply; },
             [&](caf::error& err) {
               answer = failure{"the session did not answer: " + sys.render(err)};
             });
  return answer;
}

} // namespace troupe
