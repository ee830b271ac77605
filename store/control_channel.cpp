#include "store/control_channel.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "protocol/bounded_json.hpp"
#include "protocol/private_files.hpp"
#include "store/ids.hpp"

namespace troupe {

namespace {

// The most of an answer a client reads: the session's answers are one short line.
constexpr size_t max_answer = 1024 * 1024;

// control.json is a few dozen bytes; anything much larger is not one.
constexpr size_t max_control_file = 64 * 1024;

bool denied(int error) { return error == EACCES || error == EPERM; }

// Milliseconds left until `deadline`, at least 0.
int left_ms(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
    deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

} // namespace

expected<control_file> read_control_file(const session_paths& session) {
  auto path = session.control();
  file_handle fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (!fd) {
    int error = errno;
    if (error == ENOENT)
      return failure{"no control endpoint (" + path.string() + " is missing)"};
    if (denied(error))
      return failure{"permission denied: cannot read " + path.string() +
                     " (the session belongs to another user?)"};
    return failure{"cannot read " + path.string() + ": " + std::strerror(error)};
  }
  std::string text;
  char chunk[4096];
  for (;;) {
    auto n = ::read(fd.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int error = errno;
      return failure{"cannot read " + path.string() + ": " + std::strerror(error)};
    }
    if (n == 0)
      break;
    text.append(chunk, static_cast<size_t>(n));
    if (text.size() > max_control_file)
      return failure{path.string() + " is not a control file (too large)"};
  }
  auto parsed = parse_json_bounded(text);
  auto json = parsed ? std::move(*parsed) : nlohmann::json{};
  if (!json.is_object() || !json.contains("token") || !json["token"].is_string())
    return failure{path.string() + " is not a control file"};
  if (!json.contains("socket") || !json["socket"].is_string())
    return failure{path.string() + " names no socket (written by an older troupe?)"};
  control_file file;
  file.socket = json["socket"].get<std::string>();
  file.token = json["token"].get<std::string>();
  // Only a pid that is a whole number in range is taken: anything else names no process.
  if (auto pid = json.find("pid"); pid != json.end() && pid->is_number_integer() &&
                                   number_fits<int64_t>(*pid))
    file.pid = pid->get<int64_t>();
  return file;
}

expected<ino_t> write_control_file(int dir_fd, const session_paths& session,
                                   const std::string& socket, const std::string& token) {
  auto text = nlohmann::json{{"version", 2}, {"socket", socket}, {"token", token},
                             {"pid", ::getpid()}}
                .dump() +
              "\n";
  auto temp = std::string{session_paths::control_file_name} + "." + random_hex(6);
  auto path = session.control().string();
  auto fail = [&](int error) -> expected<ino_t> {
    ::unlinkat(dir_fd, temp.c_str(), 0);
    return failure{"cannot write " + path + ": " +
                   (error != 0 ? std::strerror(error) : "short write")};
  };
  int fd = ::openat(dir_fd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    int error = errno;
    return failure{"cannot write " + path + ": " + std::strerror(error)};
  }
  auto written = ::write(fd, text.data(), text.size());
  int error = written < 0 ? errno : 0;
  struct stat st{};
  ::fstat(fd, &st);
  ::close(fd);
  if (written != static_cast<ssize_t>(text.size()))
    return fail(error);
  if (::renameat(dir_fd, temp.c_str(), dir_fd, session_paths::control_file_name) != 0)
    return fail(errno);
  return st.st_ino;
}

std::string control_request_line(const std::string& token, control_command command,
                                 const std::string& arg) {
  nlohmann::json request = {{"token", token}, {"command", to_string(command)}, {"arg", arg}};
  return request.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

expected<control_request> parse_control_request(const std::string& line) {
  // The line is at most max_control_request bytes: parsing it costs a bounded amount.
  auto parsed = parse_json_bounded(line);
  if (!parsed)
    return failure{parsed.error()};
  auto& json = *parsed;
  if (!json.is_object())
    return failure{"not a JSON object"};
  auto text = [&](const char* key) -> const nlohmann::json* {
    auto it = json.find(key);
    return it != json.end() && it->is_string() ? &*it : nullptr;
  };
  auto token = text("token");
  auto command = text("command");
  if (token == nullptr || command == nullptr)
    return failure{"token and command must be strings"};
  if (json.contains("arg") && text("arg") == nullptr)
    return failure{"arg must be a string"};
  auto known = parse_control_command(command->get<std::string>());
  if (!known)
    return failure{known.error()};
  // What changes how the session judges and runs calls is the stream-json client's alone: a
  // tool process that can reach the socket must not lift its own permissions.
  switch (*known) {
    case control_command::end_input:
    case control_command::permission_mode:
    case control_command::model:
    case control_command::stop_task:
    case control_command::context_usage:
      return failure{"the control command '" + command->get<std::string>() +
                     "' is taken from the session's own client only"};
    default:
      break;
  }
  control_request request;
  request.token = token->get<std::string>();
  request.command = *known;
  if (auto arg = text("arg"))
    request.arg = arg->get<std::string>();
  return request;
}

expected<sockaddr_un> control_socket_address(const std::filesystem::path& dir,
                                             const std::string& name, int dir_fd) {
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    return failure{"'" + name + "' is not a socket name"};
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  auto path = (dir / name).string();
  // A deep session directory does not fit: its descriptor names it in a few bytes.
  if (path.size() >= sizeof address.sun_path)
    path = "/proc/self/fd/" + std::to_string(dir_fd) + "/" + name;
  if (path.size() >= sizeof address.sun_path)
    return failure{"the socket's name is too long: " + name};
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return address;
}

expected<control_reply> send_control(const session_paths& session, control_command command,
                                     const std::string& arg, std::chrono::milliseconds timeout) {
  const auto& session_dir = session.dir();
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto file = read_control_file(session);
  if (!file)
    return failure{file.error()};
  if (file->pid > 0 && ::kill(static_cast<pid_t>(file->pid), 0) < 0 && errno == ESRCH)
    return failure{"the session's process (pid " + std::to_string(file->pid) +
                   ") is not running"};
  auto request = control_request_line(file->token, command, arg);
  if (request.size() > max_control_request)
    return failure{"the command is too long (a request holds at most " +
                   std::to_string(max_control_request) + " bytes)"};
  auto where = (session_dir / file->socket).string();
  file_handle dir{::open(session_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)};
  if (!dir) {
    int error = errno;
    return failure{(denied(error) ? "permission denied: cannot open " : "cannot open ") +
                   session_dir.string() + ": " + std::strerror(error)};
  }
  auto address = control_socket_address(session_dir, file->socket, dir.get());
  if (!address)
    return failure{address.error()};
  file_handle sock{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  if (!sock)
    return failure{std::string{"cannot create a socket: "} + std::strerror(errno)};
  // A full backlog makes connect wait: no longer than the whole exchange may take.
  timeval wait{};
  wait.tv_sec = std::max(1, left_ms(deadline) / 1000);
  ::setsockopt(sock.get(), SOL_SOCKET, SO_SNDTIMEO, &wait, sizeof wait);
  if (::connect(sock.get(), reinterpret_cast<const sockaddr*>(&*address), sizeof *address) != 0) {
    int error = errno;
    if (denied(error))
      return failure{"permission denied: cannot connect to " + where};
    return failure{"cannot reach the session at " + where + ": " + std::strerror(error)};
  }
  ::fcntl(sock.get(), F_SETFL, ::fcntl(sock.get(), F_GETFL) | O_NONBLOCK);
  auto timed_out = [&] {
    return failure{"the session did not answer within " + std::to_string(timeout.count()) +
                   " ms"};
  };
  size_t sent = 0;
  while (sent < request.size()) {
    pollfd p{sock.get(), POLLOUT, 0};
    if (::poll(&p, 1, left_ms(deadline)) == 0)
      return timed_out();
    auto n = ::send(sock.get(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
      continue;
    if (n < 0) {
      int error = errno;
      return failure{"cannot send to the session at " + where + ": " + std::strerror(error)};
    }
    sent += static_cast<size_t>(n);
  }
  std::string answer;
  char chunk[4096];
  for (;;) {
    pollfd p{sock.get(), POLLIN, 0};
    if (::poll(&p, 1, left_ms(deadline)) == 0)
      return timed_out();
    auto n = ::recv(sock.get(), chunk, sizeof chunk, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
      continue;
    if (n < 0) {
      int error = errno;
      return failure{"the session at " + where + " closed the connection: " +
                     std::strerror(error)};
    }
    if (n == 0)
      break;
    answer.append(chunk, static_cast<size_t>(n));
    if (answer.find('\n') != std::string::npos || answer.size() > max_answer)
      break;
  }
  if (auto end = answer.find('\n'); end != std::string::npos)
    answer.erase(end);
  if (answer.empty())
    return failure{"the session at " + where + " closed the connection without an answer"};
  return parse_control_reply(answer);
}

} // namespace troupe
