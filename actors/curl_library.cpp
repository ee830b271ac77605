#include "actors/curl_library.hpp"

#include <dlfcn.h>

#include <atomic>
#include <future>
#include <string>

namespace troupe {

namespace {

template <class F>
bool bind(void* library, const char* name, F& into) {
  into = reinterpret_cast<F>(dlsym(library, name));
  return into != nullptr;
}

expected<const curl_functions*> load(const std::string& path) {
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr)
    return failure{"cannot load libcurl (" + path + "): " + dlerror() +
                   "; install libcurl4 or point TROUPE_LIBCURL at a libcurl.so"};
  static curl_functions f{};
  bool complete =
    bind(library, "curl_global_init", f.global_init) &&
    bind(library, "curl_easy_init", f.easy_init) &&
    bind(library, "curl_easy_setopt", f.easy_setopt) &&
    bind(library, "curl_easy_getinfo", f.easy_getinfo) &&
    bind(library, "curl_easy_reset", f.easy_reset) &&
    bind(library, "curl_easy_cleanup", f.easy_cleanup) &&
    bind(library, "curl_easy_strerror", f.easy_strerror) &&
    bind(library, "curl_slist_append", f.slist_append) &&
    bind(library, "curl_slist_free_all", f.slist_free_all) &&
    bind(library, "curl_multi_init", f.multi_init) &&
    bind(library, "curl_multi_setopt", f.multi_setopt) &&
    bind(library, "curl_multi_add_handle", f.multi_add_handle) &&
    bind(library, "curl_multi_remove_handle", f.multi_remove_handle) &&
    bind(library, "curl_multi_socket_action", f.multi_socket_action) &&
    bind(library, "curl_multi_info_read", f.multi_info_read) &&
    bind(library, "curl_multi_cleanup", f.multi_cleanup);
  if (!complete)
    return failure{"the libcurl at " + path + " lacks a function troupe needs (" + dlerror() +
                   "); troupe needs libcurl 7.86 or newer"};
  if (auto rc = f.global_init(CURL_GLOBAL_DEFAULT); rc != CURLE_OK)
    return failure{"libcurl's global set-up failed: " + std::string{f.easy_strerror(rc)}};
  return &f;
}

std::atomic<bool> load_started{false};

// The first caller names the library; later ones share its load.
const std::shared_future<expected<const curl_functions*>>& loading(const std::string& library) {
  static const std::shared_future<expected<const curl_functions*>> done = [&] {
    load_started = true;
    return std::async(std::launch::async, load, library).share();
  }();
  return done;
}

} // namespace

void preload_curl(const std::string& library) { loading(library); }

expected<const curl_functions*> load_curl(const std::string& library) {
  return loading(library).get();
}

void settle_curl_load() {
  if (load_started)
    loading({}).wait();
}

} // namespace troupe
