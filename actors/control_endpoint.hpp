#pragma once
// The control endpoint of a live session: a small actor published on 127.0.0.1 (ephemeral
// port) that checks each message's token and passes commands to the session. control.json
// (port, token, pid; mode 0600) in the session directory tells other processes where it is;
// it is removed when the session ends.

#include <filesystem>

#include "protocol/expected.hpp"
#include "protocol/interfaces.hpp"

namespace caf {
class actor_system;
}

namespace troupe {

/// Publishes an endpoint for `session` and writes `session_dir`/control.json. The actor system
/// must have the middleman loaded (see configure_actor_system).
expected<control_endpoint_actor> spawn_control_endpoint(caf::actor_system& sys,
                                                        session_actor session,
                                                        const std::filesystem::path& session_dir);

/// What control.json says.
struct control_file {
  uint16_t port = 0;
  std::string token;
  int64_t pid = 0;
};

/// Reads `session_dir`/control.json; an error when it is missing or unreadable.
expected<control_file> read_control_file(const std::filesystem::path& session_dir);

/// Sends one command to the session whose control.json is in `session_dir`, from a separate
/// process: connects to its endpoint, waits at most `timeout`. An error when the session is
/// not running or does not answer.
expected<std::string> send_control(caf::actor_system& sys,
                                   const std::filesystem::path& session_dir,
                                   const std::string& command, const std::string& arg,
                                   std::chrono::milliseconds timeout = std::chrono::seconds{3});

} // namespace troupe
