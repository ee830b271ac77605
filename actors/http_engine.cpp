#include "actors/http_engine.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <unordered_map>

#include <caf/actor_system.hpp>
#include <caf/after.hpp>
#include <caf/blocking_actor.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

namespace troupe {

namespace {

// Shared by the engine thread and the senders, who use it only to wake the loop
// (curl_multi_wakeup is the one call libcurl allows from other threads). Whoever lets go
// last cleans it up, so the thread never works on a freed handle.
struct multi_handle {
  CURLM* multi = curl_multi_init();
  ~multi_handle() { curl_multi_cleanup(multi); }
};

using engine_atom = caf::atom_constant<caf::atom("httpreq")>;

/// One transfer in flight; owned by the engine thread.
struct transfer {
  uint64_t id = 0;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  std::string body;
  http_client_actor requester;
  http_headers response_headers;
  bool head_sent = false;
  bool received_bytes = false;
  char error[CURL_ERROR_SIZE] = {0};

  ~transfer() {
    if (headers != nullptr)
      curl_slist_free_all(headers);
  }

  void send_head() {
    if (head_sent)
      return;
    head_sent = true;
    long status = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    caf::anon_send(requester,
                   http_response_head{id, static_cast<int32_t>(status), response_headers});
  }
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<transfer*>(user);
  t->received_bytes = true; // the reply has begun: a retry could no longer be transparent
  std::string_view line{data, size * count};
  if (line.rfind("HTTP/", 0) == 0) {
    t->response_headers.clear(); // a new response (after a redirect or 100-continue)
  } else if (auto colon = line.find(':'); colon != std::string_view::npos) {
    std::string name{line.substr(0, colon)};
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    auto value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
      value.remove_suffix(1);
    t->response_headers.emplace_back(std::move(name), std::string{value});
  }
  return size * count;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<transfer*>(user);
  t->received_bytes = true;
  t->send_head();
  caf::anon_send(t->requester, http_body_chunk{t->id, std::string{data, size * count}});
  return size * count;
}

class engine_loop {
public:
  explicit engine_loop(CURLM* multi) : multi_(multi) {}

  ~engine_loop() {
    for (auto& [id, t] : transfers_)
      remove(*t);
  }

  void add(http_request& request, http_client_actor requester) {
    auto t = std::make_unique<transfer>();
    t->id = request.id;
    t->requester = std::move(requester);
    t->body = std::move(request.body);
    t->easy = curl_easy_init();
    for (auto& [name, value] : request.headers)
      t->headers = curl_slist_append(t->headers, (name + ": " + value).c_str());
    t->headers = curl_slist_append(t->headers, "Expect:");
    auto* e = t->easy;
    curl_easy_setopt(e, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, t->body.c_str());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t->body.size()));
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, t.get());
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t.get());
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->error);
    curl_easy_setopt(e, CURLOPT_PRIVATE, t.get());
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(request.connect_timeout_ms));
    // The requester watches for silence precisely; this is only a backstop for a requester
    // that went away (curl's low-speed check averages over a window, seconds late).
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME,
                     std::max(1L, static_cast<long>(2 * request.idle_timeout_ms / 1000 + 10)));
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    curl_multi_add_handle(multi_, e);
    transfers_.emplace(t->id, std::move(t));
  }

  void cancel(uint64_t id) {
    auto i = transfers_.find(id);
    if (i == transfers_.end())
      return;
    remove(*i->second);
    transfers_.erase(i);
  }

  void run_once() {
    int running = 0;
    curl_multi_perform(multi_, &running);
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi_, &queued)) {
      if (msg->msg != CURLMSG_DONE)
        continue;
      transfer* t = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
      auto code = msg->data.result;
      http_transfer_done done;
      done.id = t->id;
      done.curl_code = static_cast<int32_t>(code);
      done.received_bytes = t->received_bytes;
      if (code == CURLE_OK) {
        t->send_head();
      } else {
        done.error = t->error[0] != '\0' ? t->error : curl_easy_strerror(code);
      }
      caf::anon_send(t->requester, std::move(done));
      auto id = t->id;
      remove(*t);
      transfers_.erase(id);
    }
    curl_multi_poll(multi_, nullptr, 0, 1000, nullptr);
  }

private:
  void remove(transfer& t) {
    curl_multi_remove_handle(multi_, t.easy);
    curl_easy_cleanup(t.easy);
  }

  CURLM* multi_;
  std::unordered_map<uint64_t, std::unique_ptr<transfer>> transfers_;
};

} // namespace

struct http_engine::handle {
  std::shared_ptr<multi_handle> multi;
  caf::actor engine;

  void wake() const { curl_multi_wakeup(multi->multi); }
};

http_engine http_engine::start(caf::actor_system& sys) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  http_engine result;
  result.handle_ = std::make_shared<handle>();
  auto multi = std::make_shared<multi_handle>();
  curl_multi_setopt(multi->multi, CURLMOPT_MAXCONNECTS, 2048L);
  result.handle_->multi = multi;
  result.handle_->engine = sys.spawn<caf::detached>([multi](caf::blocking_actor* self) {
    engine_loop loop{multi->multi};
    bool running = true;
    while (running) {
      // Take every message waiting, then let curl work until the next wake-up.
      bool more = true;
      while (more && running)
        self->receive(
          [&](engine_atom, http_request& request, http_client_actor& requester) {
            loop.add(request, std::move(requester));
          },
          [&](cancel_atom, uint64_t id) { loop.cancel(id); },
          [&](caf::exit_msg&) { running = false; },
          caf::after(std::chrono::seconds(0)) >> [&] { more = false; });
      if (running)
        loop.run_once();
    }
  });
  return result;
}

void http_engine::submit(http_request request, http_client_actor requester) const {
  caf::anon_send(handle_->engine, engine_atom::value, std::move(request), std::move(requester));
  handle_->wake();
}

void http_engine::cancel(uint64_t id) const {
  caf::anon_send(handle_->engine, cancel_atom::value, id);
  handle_->wake();
}

void http_engine::stop() const {
  caf::anon_send_exit(handle_->engine, caf::exit_reason::user_shutdown);
  handle_->wake();
}

} // namespace troupe
