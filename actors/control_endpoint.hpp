#pragma once
// The control endpoint of a live session: a Unix domain socket, `control.sock` in the session
// directory, served by a poll loop on a thread of its own. Only the session's own user gets in
// (SO_PEERCRED); each connection carries one request line of at most 64 KiB — JSON
// {token, command, arg} — and gets one line back. control.json (token, pid, socket name; mode
// 0600) tells other processes where it is; both files are removed when the session ends.
// No CAF networking: nothing a peer sends is parsed before its length is bounded.

#include <sys/types.h>
#include <sys/un.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>

#include <caf/actor.hpp>

#include "protocol/expected.hpp"
#include "protocol/interfaces.hpp"

namespace caf {
class actor_system;
}

namespace troupe {

/// The most a request line may hold, its newline included; longer ones are refused.
constexpr size_t max_control_request = 64 * 1024;

/// Opens `session_dir`/control.sock (replacing a stale one: call it with the session's lock
/// held) and writes `session_dir`/control.json, then serves them until `session` ends. Returns
/// the endpoint's loop (a detached actor).
expected<caf::actor> spawn_control_endpoint(caf::actor_system& sys, session_actor session,
                                      const std::filesystem::path& session_dir);

/// What control.json says.
struct control_file {
  /// The socket's file name inside the session directory.
  std::string socket;
  std::string token;
  int64_t pid = 0;
};

/// Writes `dir`/control.json (through `dir_fd`, a descriptor of `dir`) for this process:
/// aside with mode 0600, then renamed into place, so a reader sees no file or the whole of it
/// and nobody else can read the token. Returns the file's inode.
expected<ino_t> write_control_file(int dir_fd, const std::filesystem::path& dir,
                                   const std::string& socket, const std::string& token);

/// Reads `session_dir`/control.json. The error says "permission denied" when that is why it
/// cannot be read, and that it is missing when it is.
expected<control_file> read_control_file(const std::filesystem::path& session_dir);

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

/// Sends one command to the session whose control.json is in `session_dir`, from a separate
/// process; waits at most `timeout`. An error when the session is not running, cannot be
/// reached or does not answer; otherwise the session's reply (error and refused ones included),
/// read from its answer line.
expected<control_reply> send_control(const std::filesystem::path& session_dir,
                                     control_command command, const std::string& arg,
                                     std::chrono::milliseconds timeout = std::chrono::seconds{10});

} // namespace troupe
