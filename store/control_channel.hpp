#pragma once
// How another process reaches a live session: control.json in its directory (the socket's
// name, a token, the pid; mode 0600), the socket's address, the request line both sides speak,
// and the client that sends one command and reads the answer (what `troupe notify`,
// `interrupt` and `background` use). The endpoint that serves it is actors/control_endpoint.

#include <sys/types.h>
#include <sys/un.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "protocol/control.hpp"
#include "protocol/expected.hpp"
#include "store/session_paths.hpp"

namespace troupe {

/// The most a request line may hold, its newline included; longer ones are refused.
constexpr size_t max_control_request = 64 * 1024;

/// What control.json says.
struct control_file {
  /// The socket's file name inside the session directory.
  std::string socket;
  std::string token;
  int64_t pid = 0;
};

/// Writes `session`'s control.json (through `dir_fd`, a descriptor of its directory) for this
/// process: aside with mode 0600, then renamed into place, so a reader sees no file or the
/// whole of it and nobody else can read the token. Returns the file's inode.
expected<ino_t> write_control_file(int dir_fd, const session_paths& session,
                                   const std::string& socket, const std::string& token);

/// Reads `session`'s control.json. The error says "permission denied" when that is why it
/// cannot be read, and that it is missing when it is.
expected<control_file> read_control_file(const session_paths& session);

/// Returns one request as it goes on the wire: a JSON line, the command by its spelling.
std::string control_request_line(const std::string& token, control_command command,
                                 const std::string& arg);

/// A request read off the wire.
struct control_request {
  std::string token;
  control_command command = control_command::poke;
  std::string arg;
};

/// Parses one request line (without its newline); an error for anything but a JSON object
/// whose token, command and (optional) arg are strings, and for a command with no spelling in
/// protocol/control.hpp.
expected<control_request> parse_control_request(const std::string& line);

/// Where the socket `name` in `dir` is reached: its path, or /proc/self/fd/<dir_fd>/`name` when
/// the path is longer than a socket address holds (108 bytes). `dir_fd` is an O_PATH descriptor
/// of `dir` that stays open while the address is used.
expected<sockaddr_un> control_socket_address(const std::filesystem::path& dir,
                                             const std::string& name, int dir_fd);

/// Sends one command to `session` (through its control.json), from a separate process; waits at
/// most `timeout`. An error when the session is not running, cannot be reached or does not
/// answer; otherwise the session's reply (error and refused ones included), read from its
/// answer line.
expected<control_reply> send_control(const session_paths& session,
                                     control_command command, const std::string& arg,
                                     std::chrono::milliseconds timeout = std::chrono::seconds{10});

} // namespace troupe
