#include "orchestrator/environment.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "store/notification_queue.hpp"

namespace troupe {

int fail(const std::string& message) {
  std::fprintf(stderr, "troupe: %s\n", message.c_str());
  return usage_error;
}

int fail_at_runtime(const std::string& message) {
  std::fprintf(stderr, "troupe: %s\n", message.c_str());
  return runtime_error_exit;
}

std::string env_or(const char* name, std::string fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string{value} : fallback;
}

std::filesystem::path home_dir() { return env_or("HOME", "/tmp"); }

// The first executable bash on PATH, resolved once per run.
std::string find_program(std::string_view name) {
  auto variable = env_or("PATH", "/usr/bin:/bin");
  std::string_view path = variable;
  for (size_t start = 0; start <= path.size();) {
    auto end = path.find(':', start);
    auto dir = path.substr(start, end == std::string_view::npos ? std::string_view::npos
                                                                : end - start);
    auto candidate = std::string{dir.empty() ? std::string_view{"."} : dir} + "/" +
                     std::string{name};
    if (::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    if (end == std::string_view::npos)
      break;
    start = end + 1;
  }
  return {};
}

std::string find_bash() {
  auto found = find_program("bash");
  return found.empty() ? "/bin/bash" : found;
}

std::string sandbox_program() {
  auto configured = env_or("TROUPE_BWRAP");
  return configured.empty() ? find_program("bwrap") : configured;
}

std::string libcurl_library() { return env_or("TROUPE_LIBCURL", "libcurl.so.4"); }

expected<bool> check_http_client_choice() {
  auto client = env_or("TROUPE_HTTP_CLIENT");
  if (!client.empty() && client != "builtin" && client != "libcurl")
    return failure{"invalid TROUPE_HTTP_CLIENT '" + client +
                   "': expected builtin (plain http to a local server without libcurl, the "
                   "default) or libcurl (every request through libcurl)"};
  return true;
}

std::filesystem::path troupe_home() {
  auto configured = env_or("TROUPE_HOME");
  return configured.empty() ? home_dir() / ".local/share/troupe"
                            : std::filesystem::path{configured};
}

std::filesystem::path config_home() {
  auto xdg = env_or("XDG_CONFIG_HOME");
  return xdg.empty() ? home_dir() / ".config" : std::filesystem::path{xdg};
}

expected<long> parse_count(const std::string& text, const std::string& where, long low, long high,
                           const char* what) {
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || end == text.c_str() || *end != '\0' || errno != 0 || value < low ||
      value > high)
    return failure{"invalid " + where + " '" + text + "': expected a whole number of " + what +
                   " from " + std::to_string(low) + " to " + std::to_string(high)};
  return value;
}

expected<long> count_setting(const std::string& flag_value, const char* flag, const char* variable,
                             long fallback, long low, long high, const char* what) {
  if (!flag_value.empty())
    return parse_count(flag_value, flag, low, high, what);
  if (auto text = env_or(variable); !text.empty())
    return parse_count(text, variable, low, high, what);
  return fallback;
}

expected<size_t> notification_cap(const std::string& flag_value) {
  auto cap = count_setting(flag_value, "--max-bytes", "TROUPE_MAX_NOTIFICATION_BYTES",
                           static_cast<long>(notification_size_cap), 1,
                           static_cast<long>(notification_size_ceiling), "bytes");
  if (!cap)
    return failure{cap.error()};
  return static_cast<size_t>(*cap);
}

expected<std::string> read_notification_text(const std::vector<std::string>& words, size_t cap) {
  std::string text;
  for (auto& word : words)
    text += (text.empty() ? "" : " ") + word;
  if (text.empty() && !isatty(STDIN_FILENO)) {
    // Read in bounded steps and stop one byte past the cap: a huge or endless stdin costs no
    // more than the cap.
    char buffer[65536];
    while (text.size() <= cap) {
      auto n = ::read(STDIN_FILENO, buffer, std::min(sizeof buffer, cap + 1 - text.size()));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      text.append(buffer, static_cast<size_t>(n));
    }
  }
  if (text.size() > cap)
    return failure{"the notification is longer than " + std::to_string(cap) +
                   " bytes (--max-bytes, TROUPE_MAX_NOTIFICATION_BYTES); nothing was sent"};
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
    text.pop_back();
  return text;
}

} // namespace troupe
