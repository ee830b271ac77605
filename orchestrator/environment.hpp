#pragma once
// What the CLI reads from its environment, and how it reports errors. Only orchestrator/ reads
// the environment.

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/expected.hpp"

namespace troupe {

/// Exit code of a usage or configuration error, and of a runtime error.
inline constexpr int usage_error = 2;
inline constexpr int runtime_error_exit = 1;

/// Prints "troupe: MESSAGE" on stderr and returns usage_error.
int fail(const std::string& message);

/// Prints "troupe: MESSAGE" on stderr and returns runtime_error_exit.
int fail_at_runtime(const std::string& message);

/// Returns the variable's value, or `fallback` when it is unset or empty.
std::string env_or(const char* name, std::string fallback = {});

/// $HOME (or /tmp).
std::filesystem::path home_dir();

/// $XDG_CONFIG_HOME, else ~/.config.
std::filesystem::path config_home();

/// $TROUPE_HOME, else ~/.local/share/troupe.
std::filesystem::path troupe_home();

/// The first executable `name` in a directory of $PATH, "" for none.
std::string find_program(std::string_view name);

/// The first executable bash on PATH.
std::string find_bash();

/// The bubblewrap the sandbox runs: $TROUPE_BWRAP as given, else the first bwrap on PATH;
/// "" for none.
std::string sandbox_program();

/// The libcurl an API model's engine loads: $TROUPE_LIBCURL (a file name or path for dlopen),
/// else libcurl.so.4.
std::string libcurl_library();

/// Checks TROUPE_HTTP_CLIENT: unset, `builtin` or `libcurl`.
expected<bool> check_http_client_choice();

/// Parses a flag's or variable's value as a whole number in [low, high]; the error names
/// `where` it came from and `what` it counts.
expected<long> parse_count(const std::string& text, const std::string& where, long low, long high,
                           const char* what);

/// The flag when given, else the environment variable, else `fallback`, each checked by
/// parse_count.
expected<long> count_setting(const std::string& flag_value, const char* flag, const char* variable,
                             long fallback, long low, long high, const char* what);

/// The largest notification text (`flag_value` from --max-bytes, else
/// TROUPE_MAX_NOTIFICATION_BYTES, else 1 MiB).
expected<size_t> notification_cap(const std::string& flag_value);

/// Joins the words of a notification; with none, reads stdin when it is not a terminal, never
/// more than `cap` + 1 bytes of it. Longer than `cap` bytes is an error.
expected<std::string> read_notification_text(const std::vector<std::string>& words, size_t cap);

} // namespace troupe
