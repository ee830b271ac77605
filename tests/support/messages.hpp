#pragma once
// Messages for tests of the files below the actors (store/).

#include <string>

#include "protocol/message.hpp"
#include "store/ids.hpp"

namespace troupe::test {

/// A user message as a session logs one: a fresh id, the time now.
inline message user_message(std::string text, message_origin origin = message_origin::prompt) {
  message m;
  m.id = new_message_id();
  m.role = role::user;
  m.content = std::move(text);
  m.origin = origin;
  m.timestamp_ms = now_ms();
  return m;
}

} // namespace troupe::test
