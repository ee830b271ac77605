#include "actors/ids.hpp"

#include <chrono>
#include <ctime>
#include <random>

namespace troupe {

std::string random_hex(size_t n) {
  // One generator per thread: no lock, no shared state between actors.
  thread_local std::mt19937_64 engine{std::random_device{}()};
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(n, '0');
  uint64_t bits = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i % 16 == 0)
      bits = engine();
    out[i] = digits[bits & 0xf];
    bits >>= 4;
  }
  return out;
}

std::string new_message_id() { return "msg_" + random_hex(16); }

std::string new_session_id() {
  auto now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &utc);
  return std::string{stamp} + "-" + random_hex(6);
}

bool is_valid_session_id(const std::string& id) {
  if (id.empty() || id.size() > 128 || id == "." || id == "..")
    return false;
  for (char c : id)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'))
      return false;
  return true;
}

int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

} // namespace troupe
