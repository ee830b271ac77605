#pragma once
// Identifiers and clocks: session, message and agent ids, secrets, the time.

#include <cstdint>
#include <string>
#include <string_view>

namespace troupe {

/// Returns n random lowercase hex digits.
std::string random_hex(size_t n);

/// Returns n hex digits straight from the kernel's generator: for secrets (control tokens).
std::string secret_hex(size_t n);

/// Returns a new message id ("msg_" + 16 hex digits).
std::string new_message_id();

/// Returns a new session id: UTC date and time plus random digits, sortable by creation.
std::string new_session_id();

/// Returns true when id can name a session directory (letters, digits, '.', '_', '-').
bool is_valid_session_id(const std::string& id);

/// Returns 16 hex digits of the FNV-1a hash of `text`: the same on every run and machine
/// (std::hash is not), for names made from text (a fleet's task ids, its results file).
std::string stable_hash_hex(std::string_view text);

/// Returns milliseconds since the Unix epoch.
int64_t now_ms();

/// Returns microseconds since the Unix epoch (notification latencies).
int64_t now_us();

} // namespace troupe
