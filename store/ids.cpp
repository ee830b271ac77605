#include "store/ids.hpp"

#include <sys/random.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <random>
#include <stdexcept>
#include <array>

namespace troupe {

namespace {

constexpr char hex_digits[] = "0123456789abcdef";

// Fills `out` from the kernel's generator (getrandom blocks only before the pool is seeded).
void kernel_random(unsigned char* out, size_t n) {
  while (n > 0) {
    auto got = ::getrandom(out, n, 0);
    if (got < 0) {
      if (errno == EINTR)
        continue;
      throw std::runtime_error("getrandom failed");
    }
    out += got;
    n -= static_cast<size_t>(got);
  }
}

} // namespace

std::string random_hex(size_t n) {
  // One generator per thread: no lock, no shared state between actors. Seeded with 256 bits
  // from the kernel, so one id says nothing about the next.
  thread_local std::mt19937_64 engine = [] {
    std::array<uint32_t, 8> seed{};
    kernel_random(reinterpret_cast<unsigned char*>(seed.data()), sizeof seed);
    std::seed_seq seq(seed.begin(), seed.end());
    return std::mt19937_64{seq};
  }();
  std::string out(n, '0');
  uint64_t bits = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i % 16 == 0)
      bits = engine();
    out[i] = hex_digits[bits & 0xf];
    bits >>= 4;
  }
  return out;
}

std::string secret_hex(size_t n) {
  std::string bytes((n + 1) / 2, '\0');
  kernel_random(reinterpret_cast<unsigned char*>(bytes.data()), bytes.size());
  std::string out(n, '0');
  for (size_t i = 0; i < n; ++i) {
    auto byte = static_cast<unsigned char>(bytes[i / 2]);
    out[i] = hex_digits[i % 2 == 0 ? byte >> 4 : byte & 0xf];
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

int64_t now_us() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

std::string stable_hash_hex(std::string_view text) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  char digits[17];
  std::snprintf(digits, sizeof digits, "%016llx", static_cast<unsigned long long>(hash));
  return digits;
}

} // namespace troupe
