#pragma once
// libcurl, loaded at run time instead of linked: its dependency chain (OpenSSL, GnuTLS,
// Kerberos, LDAP, …) is about 9 ms of dynamic linking and 6 MB of pages, which a scripted run,
// the demo and every short command should not pay, and which an API run pays on a helper
// thread while the actor system starts.

#include <string>

#include <curl/curl.h>

#include "protocol/expected.hpp"

namespace troupe {

/// The libcurl functions troupe calls.
struct curl_functions {
  decltype(&::curl_global_init) global_init;
  decltype(&::curl_easy_init) easy_init;
  decltype(&::curl_easy_setopt) easy_setopt;
  decltype(&::curl_easy_getinfo) easy_getinfo;
  decltype(&::curl_easy_reset) easy_reset;
  decltype(&::curl_easy_cleanup) easy_cleanup;
  decltype(&::curl_easy_strerror) easy_strerror;
  decltype(&::curl_slist_append) slist_append;
  decltype(&::curl_slist_free_all) slist_free_all;
  decltype(&::curl_multi_init) multi_init;
  decltype(&::curl_multi_setopt) multi_setopt;
  decltype(&::curl_multi_add_handle) multi_add_handle;
  decltype(&::curl_multi_remove_handle) multi_remove_handle;
  decltype(&::curl_multi_socket_action) multi_socket_action;
  decltype(&::curl_multi_info_read) multi_info_read;
  decltype(&::curl_multi_cleanup) multi_cleanup;
};

/// Starts loading libcurl (`library`, a name or path for dlopen; the orchestrator reads
/// $TROUPE_LIBCURL) and its global set-up on a helper thread. Calling it again, or never, is
/// fine: the first library named is the one loaded.
void preload_curl(const std::string& library);

/// Waits for the load (starting it with `library` if none was started): the functions, or why
/// libcurl is unusable.
expected<const curl_functions*> load_curl(const std::string& library);

/// Waits for a load preload_curl started, if any. The process must not exit while the helper
/// thread is inside dlopen or libcurl's global set-up: exit's destructors and the dynamic
/// loader's own clean-up would run under it (a crash in ~1 of 10 runs that ended early, e.g.
/// on a bad flag).
void settle_curl_load();

} // namespace troupe
