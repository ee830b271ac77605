#include "actors/mcp_server.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <map>
#include <set>
#include <optional>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/process_runner.hpp"
#include "protocol/private_files.hpp"
#include "providers/sse.hpp"
#include "tools/sandbox.hpp"
#include "tools/tool_spec.hpp"

namespace troupe {

namespace {

/// The longest line a server may write (a tools/call result with a large file in it).
constexpr size_t max_line_bytes = size_t{64} << 20;
/// What is kept of a server's stderr to say why it died.
constexpr size_t stderr_tail_bytes = 1500;
/// Most pages of one tools/list: a server whose cursors never end is not followed forever.
constexpr int max_tool_pages = 1000;
/// What the line splitter sends in place of a line it dropped for its size: a NUL byte, which no
/// JSON text starts with.
constexpr char dropped_line = '\0';
/// How soon a write the server's full stdin refused is tried again.
constexpr std::chrono::milliseconds flush_retry{5};

/// A tools/call in flight, or waiting for the server to be started.
struct pending_call {
  caf::typed_response_promise<tool_result> promise;
  tool_call call;
  /// Who asked (an agent's executor): call ids are only unique per agent, and a shared
  /// server serves many, so a cancel names the call by its caller and id.
  caf::actor_addr caller;
  std::string blob_dir;
  session_actor session;
  /// Its JSON-RPC id once sent (also its progress token); 0: not sent yet.
  int64_t rpc = 0;
  /// Its timeout's serial (renewed by each progress notification).
  uint64_t timer = 0;
};

/// What a request of troupe's was for.
struct rpc_purpose {
  enum class kind : uint8_t { initialize, tools_list, call } what = kind::call;
  /// The connection it was sent on: an answer to an earlier one is stale.
  uint64_t connection = 0;
  /// The call's key in `calls`.
  uint64_t call = 0;
};

/// One HTTP request to a Streamable HTTP server and what came back so far.
struct http_exchange {
  /// The JSON-RPC request it carries (0: a notification or an answer).
  int64_t rpc = 0;
  uint64_t connection = 0;
  int32_t status = 0;
  bool sse = false;
  sse_parser events;
  std::string body;
};

/// What a timer is for.
struct timer_purpose {
  enum class kind : uint8_t { startup, call, flush, wait, list } what = kind::call;
  uint64_t connection = 0;
  uint64_t call = 0;
  uint64_t waiter = 0;
};

rpc_purpose rpc_for(rpc_purpose::kind what, uint64_t call = 0) {
  rpc_purpose purpose;
  purpose.what = what;
  purpose.call = call;
  return purpose;
}

timer_purpose timer_for(timer_purpose::kind what, uint64_t connection = 0, uint64_t call = 0,
                        uint64_t waiter = 0) {
  timer_purpose purpose;
  purpose.what = what;
  purpose.connection = connection;
  purpose.call = call;
  purpose.waiter = waiter;
  return purpose;
}

// The spec's notifications/cancelled for the request `rpc`.
nlohmann::json cancel_notification(int64_t rpc, const std::string& why) {
  return mcp_notification("notifications/cancelled", {{"requestId", rpc}, {"reason", why}});
}

struct mcp_server_state {
  mcp_server_setup setup;
  mcp_server_report report;
  std::vector<mcp_listener_actor> subscribers;

  /// The serial of the current process (stdio) or session (http); 0: none started yet.
  uint64_t connection = 0;
  /// A process runs (stdio) or the server is reachable as far as troupe knows (http).
  bool alive = false;
  /// Start-up (process, initialize, tools/list) is under way.
  bool starting = false;
  /// initialize succeeded on some connection: a server that dies after it is started again.
  bool ever_connected = false;
  int restarts = 0;

  int input_fd = -1;
  child_control control;
  std::string outbox;
  bool flush_due = false;

  int64_t next_rpc = 1;
  std::map<int64_t, rpc_purpose> rpcs;
  /// Calls in flight by their own key (not the model's call id: a shared server serves many
  /// agents, whose ids may be alike).
  std::map<uint64_t, pending_call> calls;
  uint64_t next_call = 0;
  /// Calls that arrived while the server was being started, in order.
  std::vector<pending_call> queued;
  /// Answers of calls that came while the tools were being listed again: held until the new
  /// list is out, so that the step the answer goes to offers what the server said it has now.
  std::vector<std::pair<uint64_t, nlohmann::json>> held_answers;
  /// The tools of a tools/list in progress, page by page.
  std::vector<mcp_tool> listed;
  std::set<std::string> listed_names;
  int pages = 0;
  /// The timer of the tools/list page awaited: a page that never comes ends the listing.
  uint64_t list_timer = 0;
  bool listing = false;
  bool list_again = false;

  uint64_t next_timer = 0;
  std::map<uint64_t, timer_purpose> timers;
  uint64_t next_waiter = 0;
  std::map<uint64_t, caf::typed_response_promise<mcp_server_report>> start_waiters;

  std::string session_header;
  std::map<uint64_t, http_exchange> exchanges;
  uint64_t exchange_sequence = 0;

  ~mcp_server_state() {
    if (input_fd >= 0) {
      // A call still in flight as the server is stopped is cancelled at it first: the exit
      // that ends this actor is taken ahead of a cancel still in its mailbox. Best effort, what
      // the pipe takes at once (after what the outbox still held, which may end a line).
      std::string last = outbox;
      for (auto& [key, call] : calls)
        if (call.rpc != 0)
          last += mcp_line(cancel_notification(call.rpc, "troupe is stopping")) + "\n";
      if (!last.empty() && alive)
        [[maybe_unused]] auto written = ::write(input_fd, last.data(), last.size());
      ::close(input_fd);
    }
    // Dropping the hold kills the process's group; its supervisor reaps it and what it left.
    control = child_control{};
    if (setup.http)
      for (auto& [id, exchange] : exchanges)
        setup.http->cancel(id);
  }
};

using self_ptr = mcp_server_actor::stateful_pointer<mcp_server_state>;

const std::string& server_name(self_ptr self) { return self->state.setup.config.name; }

std::string quoted_name(self_ptr self) { return "the MCP server '" + server_name(self) + "'"; }

uint64_t start_timer(self_ptr self, std::chrono::milliseconds after, timer_purpose purpose) {
  auto& st = self->state;
  auto serial = ++st.next_timer;
  st.timers.emplace(serial, std::move(purpose));
  self->delayed_send(self, after, due_atom::value, serial);
  return serial;
}

void publish(self_ptr self) {
  auto& st = self->state;
  ++st.report.revision;
  for (auto& subscriber : st.subscribers)
    self->send(subscriber, st.report);
}

// --- writing ------------------------------------------------------------------------------

void flush(self_ptr self) {
  auto& st = self->state;
  while (!st.outbox.empty() && st.input_fd >= 0) {
    auto n = ::write(st.input_fd, st.outbox.data(), st.outbox.size());
    if (n > 0) {
      st.outbox.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN) {
      // The server is not reading: try again shortly, never block a scheduler thread.
      if (!st.flush_due) {
        st.flush_due = true;
        start_timer(self, flush_retry, timer_for(timer_purpose::kind::flush));
      }
      return;
    }
    // Its stdin is closed: it is going away, and its end is on its way.
    st.outbox.clear();
  }
}

uint64_t exchange_id(self_ptr self) {
  // Actor ids are unique in the process; the low bits count this actor's exchanges.
  return (static_cast<uint64_t>(self->id()) << 24) | (++self->state.exchange_sequence & 0xffffff);
}

void take_text(self_ptr self, std::string_view text);

void fail_calls(self_ptr self, const std::string& why);
void drop_connection(self_ptr self);

void send_message(self_ptr self, const nlohmann::json& message, int64_t rpc = 0) {
  auto& st = self->state;
  if (st.setup.config.transport == mcp_transport::sdk) {
    // The client answers a request with the server's response; a notification's
    // acknowledgement carries nothing.
    auto connection = st.connection;
    self->request(st.setup.client, caf::infinite, mcp_atom::value, st.setup.config.name, message)
      .then(
        [=](nlohmann::json& response) {
          if (rpc != 0 && connection == self->state.connection)
            take_text(self, mcp_line(response));
        },
        [=](caf::error& err) {
          if (rpc != 0 && connection == self->state.connection)
            take_text(self, mcp_line(mcp_error(rpc, -32603, "the client did not answer: " +
                                                            self->system().render(err))));
        });
    return;
  }
  if (st.setup.config.transport == mcp_transport::stdio) {
    st.outbox += mcp_line(message);
    st.outbox += '\n';
    flush(self);
    if (st.outbox.size() > max_line_bytes) {
      // More than 64 MiB it has not read: it is stuck. What it was sent is lost; the next
      // call starts it again.
      spdlog::warn("MCP server {} stopped reading its input; it is stopped", server_name(self));
      drop_connection(self);
      fail_calls(self, quoted_name(self) + " stopped reading its input; it is started again "
                                           "on the next call");
    }
    return;
  }
  http_request request;
  request.id = exchange_id(self);
  request.url = st.setup.config.url;
  request.headers = {{"Content-Type", "application/json"},
                     {"Accept", "application/json, text/event-stream"}};
  if (!st.session_header.empty())
    request.headers.emplace_back("Mcp-Session-Id", st.session_header);
  if (!st.report.protocol_version.empty())
    request.headers.emplace_back("MCP-Protocol-Version", st.report.protocol_version);
  // The configuration's headers (Authorization, …), but never over the protocol's own.
  for (auto& header : st.setup.config.headers) {
    auto name = header.first;
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (name != "content-type" && name != "accept" && name != "mcp-session-id" &&
        name != "mcp-protocol-version")
      request.headers.push_back(header);
  }
  request.body = mcp_line(message);
  auto longest = std::max(st.setup.call_timeout, st.setup.startup_timeout);
  request.idle_timeout_ms = static_cast<int32_t>(std::min<int64_t>(longest.count(), INT32_MAX));
  request.request_timeout_ms = 0; // the call's own timeout ends it
  http_exchange exchange;
  exchange.rpc = rpc;
  exchange.connection = st.connection;
  st.exchanges.emplace(request.id, std::move(exchange));
  st.setup.http->submit(std::move(request), self);
}

int64_t send_request(self_ptr self, const std::string& method, nlohmann::json params,
                     rpc_purpose purpose) {
  auto& st = self->state;
  auto id = st.next_rpc++;
  purpose.connection = st.connection;
  st.rpcs.emplace(id, std::move(purpose));
  send_message(self, mcp_request(id, method, std::move(params)), id);
  return id;
}

// --- calls --------------------------------------------------------------------------------

tool_result interrupted_result() {
  auto result = error_result("[interrupted: the MCP call was cancelled]");
  result.exit_code = 130;
  return result;
}

const mcp_tool* find_tool(self_ptr self, const std::string& qualified) {
  for (auto& tool : *self->state.report.tools)
    if (mcp_tool_name(server_name(self), tool.name) == qualified)
      return &tool;
  return nullptr;
}

std::string tool_names(self_ptr self) {
  std::string names;
  for (auto& tool : *self->state.report.tools)
    names += (names.empty() ? "" : ", ") + mcp_tool_name(server_name(self), tool.name);
  return names.empty() ? "none" : names;
}

// What a file name may hold of a call id the model chose.
std::string file_safe(const std::string& text) {
  std::string safe;
  for (char c : text)
    safe += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  return safe.substr(0, 80);
}

std::string extension_of(const std::string& mime) {
  static const std::map<std::string, std::string> known = {
    {"image/png", "png"},   {"image/jpeg", "jpg"}, {"image/gif", "gif"},
    {"image/webp", "webp"}, {"image/svg+xml", "svg"}, {"audio/wav", "wav"},
    {"audio/mpeg", "mp3"},  {"audio/ogg", "ogg"},  {"application/pdf", "pdf"}};
  auto found = known.find(mime);
  return found == known.end() ? "bin" : found->second;
}

std::optional<std::string> decode_base64(const std::string& text) {
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    int value;
    if (c >= 'A' && c <= 'Z')
      value = c - 'A';
    else if (c >= 'a' && c <= 'z')
      value = c - 'a' + 26;
    else if (c >= '0' && c <= '9')
      value = c - '0' + 52;
    else if (c == '+' || c == '-')
      value = 62;
    else if (c == '/' || c == '_')
      value = 63;
    else if (c == '=' || c == '\n' || c == '\r' || c == ' ')
      continue;
    else
      return std::nullopt;
    bits = (bits << 6) | static_cast<uint32_t>(value);
    if (++count == 4) {
      out += static_cast<char>((bits >> 16) & 0xff);
      out += static_cast<char>((bits >> 8) & 0xff);
      out += static_cast<char>(bits & 0xff);
      bits = 0;
      count = 0;
    }
  }
  if (count == 2)
    out += static_cast<char>((bits >> 4) & 0xff);
  else if (count == 3) {
    out += static_cast<char>((bits >> 10) & 0xff);
    out += static_cast<char>((bits >> 2) & 0xff);
  } else if (count == 1) {
    return std::nullopt;
  }
  return out;
}

void answer_call(self_ptr self, uint64_t key, tool_result result) {
  auto& st = self->state;
  auto found = st.calls.find(key);
  if (found == st.calls.end())
    return;
  st.timers.erase(found->second.timer);
  st.rpcs.erase(found->second.rpc);
  found->second.promise.deliver(std::move(result));
  st.calls.erase(found);
}

void finish_call(self_ptr self, uint64_t key, const nlohmann::json& result) {
  auto& st = self->state;
  auto found = st.calls.find(key);
  if (found == st.calls.end())
    return;
  if (st.listing && !st.starting) {
    // A call that changed the tools (notifications/tools/list_changed before its answer) is
    // answered once they are listed again.
    st.held_answers.emplace_back(key, result);
    return;
  }
  auto dir = found->second.blob_dir;
  auto name = file_safe(found->second.call.id);
  int blobs = 0;
  auto rendered = render_mcp_call_result(
    result, [&](const std::string& mime, const std::string& base64) -> std::string {
      if (dir.empty())
        return {};
      auto bytes = decode_base64(base64);
      if (!bytes)
        return {};
      auto path = std::filesystem::path{dir} /
                  ("mcp-" + name + "-" + std::to_string(++blobs) + "." + extension_of(mime));
      // Owner-only, as the session's other saved results are.
      if (!write_private_file(path, *bytes).empty())
        return {};
      return path.string();
    });
  st.restarts = 0; // it works: a later crash starts the count again
  answer_call(self, key, std::move(rendered));
}

void send_call(self_ptr self, pending_call pending) {
  auto& st = self->state;
  if (!st.alive) { // it went away while calls waited to be sent (a stuck input, say)
    pending.promise.deliver(error_result(quoted_name(self) +
                                         " is not running; it is started again on the next call"));
    return;
  }
  const auto* tool = find_tool(self, pending.call.name);
  if (tool == nullptr) {
    pending.promise.deliver(error_result("no tool '" + pending.call.name + "' on " +
                                         quoted_name(self) + " (its tools: " + tool_names(self) +
                                         ")"));
    return;
  }
  std::optional<std::string> problem;
  try {
    problem = validate_input(mcp_tool_spec(server_name(self), *tool), pending.call.input);
  } catch (const std::exception& e) {
    // An exception out of a handler would end the actor every agent shares.
    problem = "the call's input cannot be checked against " + quoted_name(self) +
              "'s schema: " + e.what();
  }
  if (problem) {
    pending.promise.deliver(error_result(*problem));
    return;
  }
  auto id = st.next_rpc; // the request's id is its progress token
  nlohmann::json params = {{"name", tool->name},
                           {"arguments", pending.call.input.is_object() ? pending.call.input
                                                                        : nlohmann::json::object()},
                           {"_meta", {{"progressToken", id}}}};
  // In `calls` before it is sent: a send that finds the server stuck answers it with the rest.
  auto key = ++st.next_call;
  pending.rpc = id;
  pending.timer =
    start_timer(self, st.setup.call_timeout, timer_for(timer_purpose::kind::call, 0, key));
  st.calls.emplace(key, std::move(pending));
  send_request(self, "tools/call", std::move(params), rpc_for(rpc_purpose::kind::call, key));
}

void cancel_on_server(self_ptr self, int64_t rpc, const std::string& why) {
  if (self->state.alive && rpc != 0)
    send_message(self, cancel_notification(rpc, why));
}

// --- start-up and failure -----------------------------------------------------------------

void release_held_answers(self_ptr self) {
  auto held = std::move(self->state.held_answers);
  self->state.held_answers.clear();
  for (auto& [key, result] : held)
    finish_call(self, key, result);
}

void answer_start_waiters(self_ptr self) {
  auto& st = self->state;
  for (auto& [serial, promise] : st.start_waiters)
    promise.deliver(st.report);
  st.start_waiters.clear();
}

// The connection is over (its process ended or was given up): what was sent on it is not
// answered any more.
void drop_connection(self_ptr self) {
  auto& st = self->state;
  st.alive = false;
  if (st.input_fd >= 0)
    ::close(st.input_fd);
  st.input_fd = -1;
  st.outbox.clear();
  st.control = child_control{};
  if (st.setup.http)
    for (auto& [id, exchange] : st.exchanges)
      st.setup.http->cancel(id);
  st.exchanges.clear();
  st.session_header.clear();
  st.rpcs.clear();
  st.listing = false;
  st.list_again = false;
  release_held_answers(self); // answers that came before the end are answers all the same
}

void fail_calls(self_ptr self, const std::string& why) {
  auto& st = self->state;
  auto calls = std::move(st.calls);
  st.calls.clear();
  for (auto& [id, call] : calls) {
    st.timers.erase(call.timer);
    call.promise.deliver(error_result(why));
  }
  auto queued = std::move(st.queued);
  st.queued.clear();
  for (auto& call : queued)
    call.promise.deliver(error_result(why));
}

// Start-up failed, or the server died once too often: reported failed, its tools withdrawn.
void fail(self_ptr self, const std::string& why) {
  auto& st = self->state;
  // Told to the user by the front end (stderr at start-up, /mcp, troupe mcp list) and to the
  // model in its calls' results: the log has it at info.
  spdlog::info("MCP server {}: {}", server_name(self), why);
  drop_connection(self);
  st.starting = false;
  st.report.status = mcp_status::failed;
  st.report.error = why;
  st.report.tools = std::vector<mcp_tool>{};
  fail_calls(self, quoted_name(self) + " failed: " + why);
  publish(self);
  answer_start_waiters(self);
}

// One page of tools/list, with a timer: answers held for the listing must not wait on a
// server that never sends it (start-up has its own bound).
void request_tools_page(self_ptr self, nlohmann::json params) {
  auto& st = self->state;
  st.timers.erase(st.list_timer);
  st.list_timer = start_timer(self, st.setup.startup_timeout,
                              timer_for(timer_purpose::kind::list, st.connection));
  send_request(self, "tools/list", std::move(params), rpc_for(rpc_purpose::kind::tools_list));
}

// tools/list from the first page (once start-up has initialized, and after list_changed).
void list_tools(self_ptr self) {
  auto& st = self->state;
  if (st.listing) {
    st.list_again = true; // the listing under way may predate the change
    return;
  }
  st.listing = true;
  st.listed.clear();
  st.listed_names.clear();
  st.pages = 0;
  request_tools_page(self, nullptr);
}

void run_queued(self_ptr self) {
  auto& st = self->state;
  auto queued = std::move(st.queued);
  st.queued.clear();
  for (auto& call : queued)
    send_call(self, std::move(call));
}

void take_tools_page(self_ptr self, const nlohmann::json& result) {
  auto& st = self->state;
  if (!st.listing)
    return; // a page that came after its listing was given up
  st.timers.erase(st.list_timer);
  auto page = read_tools_page(result);
  if (!page) {
    st.listing = false;
    if (st.starting)
      fail(self, "its tools/list answer is unusable: " + page.error());
    else
      spdlog::warn("MCP server {}: tools/list: {}", server_name(self), page.error());
    release_held_answers(self);
    return;
  }
  for (auto& tool : page->tools) {
    // Two tools the model would call by one name (a.b and a_b, or one listed twice): the first.
    if (st.listed_names.insert(mcp_tool_name(server_name(self), tool.name)).second)
      st.listed.push_back(std::move(tool));
    else
      spdlog::warn("MCP server {}: its tool \"{}\" has the name of another one as the model "
                   "calls them ({}): only the first is offered",
                   server_name(self), tool.name, mcp_tool_name(server_name(self), tool.name));
  }
  if (!page->next_cursor.empty()) {
    if (++st.pages >= max_tool_pages) {
      st.listing = false;
      fail(self, "its tools/list went on for " + std::to_string(max_tool_pages) + " pages");
      return;
    }
    request_tools_page(self, {{"cursor", page->next_cursor}});
    return;
  }
  st.listing = false;
  st.report.tools = std::move(st.listed);
  st.listed = {};
  if (st.starting) {
    st.starting = false;
    st.ever_connected = true;
    st.report.status = mcp_status::connected;
    st.report.error.clear();
  }
  publish(self);
  answer_start_waiters(self);
  run_queued(self);
  if (!st.list_again)
    release_held_answers(self);
  if (st.list_again) {
    st.list_again = false;
    list_tools(self);
  }
}

void take_initialize(self_ptr self, const nlohmann::json& result) {
  auto& st = self->state;
  auto info = read_initialize_result(result);
  if (!info) {
    fail(self, info.error());
    return;
  }
  st.report.protocol_version = info->protocol_version;
  st.report.server_name = info->name;
  st.report.server_version = info->version;
  send_message(self, mcp_notification("notifications/initialized"));
  list_tools(self);
}

void take_answer(self_ptr self, const mcp_incoming& in) {
  auto& st = self->state;
  if (!in.id.is_number_integer()) {
    spdlog::warn("MCP server {}: an answer to no request of troupe's (id {})", server_name(self),
                 in.id.dump());
    return;
  }
  auto found = st.rpcs.find(in.id.get<int64_t>());
  if (found == st.rpcs.end())
    return; // cancelled, timed out, or of an earlier connection
  auto purpose = std::move(found->second);
  st.rpcs.erase(found);
  bool error = in.what == mcp_incoming::kind::error;
  auto error_text = "error " + std::to_string(in.error_code) + ": " + in.error_message;
  switch (purpose.what) {
    case rpc_purpose::kind::initialize:
      if (error)
        fail(self, "initialize failed with " + error_text);
      else
        take_initialize(self, in.result);
      break;
    case rpc_purpose::kind::tools_list:
      if (!error) {
        take_tools_page(self, in.result);
        break;
      }
      st.listing = false;
      if (st.starting)
        fail(self, "tools/list failed with " + error_text);
      else
        spdlog::warn("MCP server {}: tools/list failed with {}", server_name(self), error_text);
      release_held_answers(self);
      break;
    case rpc_purpose::kind::call:
      if (error)
        answer_call(self, purpose.call,
                    error_result(quoted_name(self) + " answered the call with " + error_text));
      else
        finish_call(self, purpose.call, in.result);
      break;
  }
}

void take_progress(self_ptr self, const nlohmann::json& params) {
  auto& st = self->state;
  if (!params.is_object() || !params.contains("progressToken"))
    return;
  const auto& token = params["progressToken"];
  for (auto& [id, call] : st.calls) {
    if (!(token.is_number_integer() && token.get<int64_t>() == call.rpc))
      continue;
    // A call that reports progress is alive: its timeout starts again.
    st.timers.erase(call.timer);
    call.timer = start_timer(self, st.setup.call_timeout, timer_for(timer_purpose::kind::call, 0, id));
    if (call.session)
      self->send(call.session, notice_event{"", "mcp_progress",
                                            call.call.name + " " + describe_mcp_progress(params)});
    return;
  }
}

void take_message(self_ptr self, const mcp_incoming& in) {
  switch (in.what) {
    case mcp_incoming::kind::invalid:
      spdlog::warn("MCP server {}: ignored what is not JSON-RPC 2.0: {}", server_name(self),
                   in.error_message);
      return;
    case mcp_incoming::kind::response:
    case mcp_incoming::kind::error:
      take_answer(self, in);
      return;
    case mcp_incoming::kind::request:
      // ping is the one request a client must answer; troupe offers no roots, sampling or
      // elicitation, and says so rather than leaving the server waiting.
      if (in.method == "ping")
        send_message(self, mcp_result(in.id, nlohmann::json::object()));
      else
        send_message(self, mcp_error(in.id, -32601, "troupe does not support " + in.method));
      return;
    case mcp_incoming::kind::notification:
      if (in.method == "notifications/tools/list_changed") {
        if (!self->state.starting)
          list_tools(self);
      } else if (in.method == "notifications/progress") {
        take_progress(self, in.params);
      } else if (in.method == "notifications/message") {
        spdlog::info("MCP server {}: {}", server_name(self),
                     in.params.is_object() && in.params.contains("data")
                       ? mcp_line(in.params["data"])
                       : mcp_line(in.params));
      }
      return;
  }
}

void take_text(self_ptr self, std::string_view text) {
  for (auto& in : read_mcp_message(text))
    take_message(self, in);
}

// The server wrote a line over the cap, which was dropped unread: which request it answered
// cannot be told, so every call in flight is answered with the error (a later answer to one of
// them is dropped), rather than left waiting for its timeout.
void take_oversized(self_ptr self) {
  auto& st = self->state;
  auto why = "a line over " + std::to_string(max_line_bytes >> 20) + " MiB";
  if (st.starting) {
    fail(self, "it wrote " + why + " during start-up");
    return;
  }
  // Calls whose answer is in (held for a re-listing) are not among them. A dropped line that
  // was a notification fails the calls all the same: no way to tell, and no call waits for
  // its timeout.
  std::vector<uint64_t> keys;
  for (auto& [key, call] : st.calls)
    if (std::none_of(st.held_answers.begin(), st.held_answers.end(),
                     [key = key](const auto& held) { return held.first == key; }))
      keys.push_back(key);
  for (auto key : keys)
    answer_call(self, key, error_result(quoted_name(self) + " answered with " + why +
                                        ", which troupe does not read"));
}

// Splits a server's stdout into lines, on its supervisor's thread, and sends them to the actor.
struct line_splitter {
  std::string partial;
  bool skipping = false;
};

void start(self_ptr self) {
  auto& st = self->state;
  drop_connection(self);
  ++st.connection;
  st.starting = true;
  st.report.status = mcp_status::pending;
  start_timer(self, st.setup.startup_timeout, timer_for(timer_purpose::kind::startup, st.connection));
  const auto& config = st.setup.config;
  if (config.transport == mcp_transport::sdk) {
    if (!st.setup.client) {
      fail(self, "no stream-json client carries it");
      return;
    }
  } else if (config.transport == mcp_transport::http) {
    if (!st.setup.http) {
      fail(self, "no HTTP engine is available (libcurl could not be loaded)");
      return;
    }
  } else {
    if (st.setup.program.empty()) {
      fail(self, "command not found: " + config.command);
      return;
    }
    child_spec spec;
    spec.program = st.setup.program;
    spec.argv.push_back(config.command);
    for (auto& arg : config.args)
      spec.argv.push_back(arg);
    spec.cwd = config.cwd.empty() ? st.setup.workspace
               : config.cwd.is_absolute() ? config.cwd
                                          : st.setup.workspace / config.cwd;
    spec.environment = st.setup.environment;
    for (auto& [name, value] : config.env)
      spec.environment[name] = value;
    spec.owner = st.setup.owner;
    spec.input = true;
    if (st.setup.sandbox)
      if (auto wrapped = st.setup.sandbox->wrap(spec.program, spec.argv, spec.cwd, spec.pass_fd);
          !wrapped) {
        fail(self, "cannot be sandboxed: " + wrapped.error());
        return;
      }
    auto started = start_child(spec);
    if (spec.pass_fd >= 0)
      ::close(spec.pass_fd);
    if (!started) {
      fail(self, "cannot be started: " + started.error());
      return;
    }
    auto control = child_control::make();
    if (!control) {
      ::close(started->input);
      ::close(started->output);
      ::close(started->errors);
      ::kill(-started->pid, SIGKILL);
      fail(self, "cannot be supervised: " + control.error());
      return;
    }
    st.input_fd = started->input;
    started->input = -1; // troupe writes it; the supervisor reads the rest
    st.control = std::move(control->first);
    auto actor = mcp_server_actor{self};
    auto serial = st.connection;
    auto name = config.name;
    auto splitter = std::make_shared<line_splitter>();
    auto tail = std::make_shared<std::string>();
    auto err_partial = std::make_shared<std::string>();
    supervision how;
    how.output_cap = 1024;
    how.exit_grace = std::chrono::milliseconds{200};
    how.owner = st.setup.owner;
    how.framing = [actor, serial, splitter, name](std::string_view chunk,
                                                  output_capture&) -> std::optional<int32_t> {
      auto& s = *splitter;
      if (chunk.empty() && !s.partial.empty() && !s.skipping) {
        caf::anon_send(actor, mcp_atom::value, serial, std::move(s.partial));
        s.partial.clear();
      }
      while (!chunk.empty()) {
        auto end = chunk.find('\n');
        auto piece = chunk.substr(0, end);
        if (!s.skipping)
          s.partial.append(piece.data(), piece.size());
        if (s.partial.size() > max_line_bytes) {
          spdlog::warn("MCP server {}: a line over {} MiB was dropped", name,
                       max_line_bytes >> 20);
          s.partial.clear();
          s.skipping = true;
          caf::anon_send(actor, mcp_atom::value, serial, std::string(1, dropped_line));
        }
        if (end == std::string_view::npos)
          break;
        if (!s.skipping && !s.partial.empty() && s.partial.back() == '\r')
          s.partial.pop_back();
        if (!s.skipping && !s.partial.empty()) // a blank line is no message
          caf::anon_send(actor, mcp_atom::value, serial, std::move(s.partial));
        s.partial.clear();
        s.skipping = false;
        chunk.remove_prefix(end + 1);
      }
      return std::nullopt;
    };
    how.on_errors = [name, tail, err_partial](std::string_view chunk) {
      // Its stderr is its log: into troupe's, a line at a time.
      err_partial->append(chunk.data(), chunk.size());
      size_t end;
      while ((end = err_partial->find('\n')) != std::string::npos) {
        auto line = err_partial->substr(0, end);
        err_partial->erase(0, end + 1);
        if (!line.empty())
          spdlog::info("MCP server {} (stderr): {}", name, line);
      }
      if (err_partial->size() > 65536)
        err_partial->clear();
      tail->append(chunk.data(), chunk.size());
      if (tail->size() > stderr_tail_bytes)
        tail->erase(0, tail->size() - stderr_tail_bytes);
    };
    run_child_detached(self->system(), *started, std::move(how), control->second,
                       [actor, serial, tail, err_partial](child_end end) {
                         auto text = *tail;
                         while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
                           text.pop_back();
                         caf::anon_send(actor, exited_atom::value, serial, end.exit_code,
                                        std::move(text));
                       });
  }
  st.alive = true;
  send_request(self, "initialize", mcp_initialize_params(st.setup.client_version),
               rpc_for(rpc_purpose::kind::initialize));
}

// The last lines of what a server wrote on stderr, for the reason it died.
std::string last_words(const std::string& tail) {
  if (tail.empty())
    return "";
  auto text = tail;
  auto cut = text.size() > 400 ? text.size() - 400 : 0;
  if (auto newline = text.find('\n', cut); cut > 0 && newline != std::string::npos)
    cut = newline + 1;
  return " (its stderr ends: " + text.substr(cut) + ")";
}

void take_exit(self_ptr self, int32_t code, const std::string& tail) {
  auto& st = self->state;
  auto how = code >= 128 ? "was killed by signal " + std::to_string(code - 128)
                         : "exited with code " + std::to_string(code);
  if (st.starting) {
    fail(self, how + " during start-up" + last_words(tail));
    return;
  }
  drop_connection(self);
  auto why = quoted_name(self) + " " + how + " while the call ran" + last_words(tail);
  if (st.restarts >= st.setup.max_restarts) {
    fail(self, how + ", and it was started again " + std::to_string(st.restarts) +
                 " times already");
    return;
  }
  spdlog::warn("MCP server {} {}; it is started again on its next call", server_name(self), how);
  fail_calls(self, why + "; it is started again on the next call");
  st.report.error = how;
}

void take_due(self_ptr self, uint64_t serial) {
  auto& st = self->state;
  auto found = st.timers.find(serial);
  if (found == st.timers.end())
    return;
  auto purpose = std::move(found->second);
  st.timers.erase(found);
  switch (purpose.what) {
    case timer_purpose::kind::startup:
      if (st.starting && purpose.connection == st.connection)
        fail(self, "it did not finish starting (initialize, tools/list) within " +
                     std::to_string(st.setup.startup_timeout.count()) +
                     " ms (MCP_TIMEOUT sets the limit)");
      break;
    case timer_purpose::kind::call: {
      auto call = st.calls.find(purpose.call);
      if (call == st.calls.end())
        break;
      cancel_on_server(self, call->second.rpc, "timed out");
      answer_call(self, purpose.call,
                  error_result(quoted_name(self) + " did not answer the call within " +
                               std::to_string(st.setup.call_timeout.count() / 1000) +
                               " s (MCP_TOOL_TIMEOUT sets the limit, in ms)"));
      break;
    }
    case timer_purpose::kind::flush:
      st.flush_due = false;
      flush(self);
      break;
    case timer_purpose::kind::wait:
      if (auto waiter = st.start_waiters.find(purpose.waiter); waiter != st.start_waiters.end()) {
        waiter->second.deliver(st.report);
        st.start_waiters.erase(waiter);
      }
      break;
    case timer_purpose::kind::list:
      // A re-listing the server never answered: its tools stay as they were, and the answers
      // held for it go out.
      if (purpose.connection == st.connection && st.listing && !st.starting) {
        spdlog::warn("MCP server {}: tools/list got no answer within {} ms; its tools stay as "
                     "they were", server_name(self), st.setup.startup_timeout.count());
        st.listing = false;
        st.list_again = false;
        release_held_answers(self);
      }
      break;
  }
}

// --- Streamable HTTP ----------------------------------------------------------------------

// An HTTP exchange that carried a request ended without its answer.
void exchange_failed(self_ptr self, const http_exchange& exchange, const std::string& why) {
  auto& st = self->state;
  if (exchange.connection != st.connection)
    return;
  auto found = st.rpcs.find(exchange.rpc);
  if (exchange.rpc == 0 || found == st.rpcs.end())
    return;
  auto purpose = found->second;
  st.rpcs.erase(found);
  if (purpose.what == rpc_purpose::kind::call) {
    answer_call(self, purpose.call, error_result(quoted_name(self) + ": " + why));
    return;
  }
  if (st.starting) {
    fail(self, why);
  } else {
    st.listing = false;
    release_held_answers(self);
  }
}

void take_head(self_ptr self, const http_response_head& head) {
  auto& st = self->state;
  auto found = st.exchanges.find(head.id);
  if (found == st.exchanges.end())
    return;
  auto& exchange = found->second;
  exchange.status = head.status;
  auto type = find_header(head.headers, "content-type");
  exchange.sse = type != nullptr && type->find("text/event-stream") != std::string::npos;
  if (auto session = find_header(head.headers, "mcp-session-id");
      session != nullptr && !session->empty())
    st.session_header = *session;
}

void take_chunk(self_ptr self, http_body_chunk& chunk) {
  auto& st = self->state;
  auto found = st.exchanges.find(chunk.id);
  if (found == st.exchanges.end())
    return;
  auto& exchange = found->second;
  if (exchange.status < 200 || exchange.status >= 300 || !exchange.sse) {
    if (exchange.body.size() < max_line_bytes)
      exchange.body += chunk.data;
    return;
  }
  for (auto& event : exchange.events.feed(chunk.data))
    if ((event.event.empty() || event.event == "message") && !event.data.empty())
      take_text(self, event.data);
}

void take_done(self_ptr self, const http_transfer_done& done) {
  auto& st = self->state;
  auto found = st.exchanges.find(done.id);
  if (found == st.exchanges.end())
    return;
  auto exchange = std::move(found->second);
  st.exchanges.erase(found);
  if (!done.error.empty()) {
    exchange_failed(self, exchange, "the HTTP request failed: " + done.error);
    return;
  }
  if (exchange.status == 404 && !st.session_header.empty() && !st.starting &&
      exchange.connection == st.connection) {
    // The server forgot the session: what was in flight on it is lost, and the next call
    // starts a new one.
    drop_connection(self);
    fail_calls(self, quoted_name(self) +
                       " ended its session (HTTP 404); it is started again on the next call");
    return;
  }
  if (exchange.status < 200 || exchange.status >= 300) {
    auto body = exchange.body.substr(0, 300);
    exchange_failed(self, exchange,
                    "HTTP " + std::to_string(exchange.status) + (body.empty() ? "" : ": " + body));
    return;
  }
  if (!exchange.sse && !exchange.body.empty())
    take_text(self, exchange.body);
  // Whatever it carried and did not answer will not be answered now.
  if (exchange.rpc != 0 && st.rpcs.count(exchange.rpc) > 0)
    exchange_failed(self, exchange, "the server's response held no answer to the request");
}

// --- the behaviour ------------------------------------------------------------------------

mcp_server_actor::behavior_type mcp_server(self_ptr self, mcp_server_setup setup) {
  auto& st = self->state;
  st.setup = std::move(setup);
  st.report.server = st.setup.config.name;
  st.report.transport = to_string(st.setup.config.transport);
  st.report.tools = std::vector<mcp_tool>{};
  self->set_down_handler([=](caf::down_msg& down) {
    auto& subscribers = self->state.subscribers;
    subscribers.erase(std::remove_if(subscribers.begin(), subscribers.end(),
                                     [&](const mcp_listener_actor& s) {
                                       return s.address() == down.source;
                                     }),
                      subscribers.end());
  });
  start(self);
  return {
    [=](subscribe_atom, mcp_listener_actor& listener) -> mcp_server_report {
      self->monitor(listener);
      self->state.subscribers.push_back(listener);
      return self->state.report;
    },
    [=](list_atom, int64_t timeout_ms) -> caf::result<mcp_server_report> {
      // 0: at once; a negative wait: until start-up is over, which its own timer bounds.
      auto& s = self->state;
      if (!s.starting || timeout_ms == 0)
        return s.report;
      auto promise = self->make_response_promise<mcp_server_report>();
      auto waiter = ++s.next_waiter;
      if (timeout_ms > 0)
        start_timer(self, std::chrono::milliseconds{timeout_ms},
                    timer_for(timer_purpose::kind::wait, 0, {}, waiter));
      s.start_waiters.emplace(waiter, promise);
      return promise;
    },
    [=](execute_atom, tool_call& call, std::string& blob_dir,
        session_actor& session) -> caf::result<tool_result> {
      auto& s = self->state;
      pending_call pending;
      // Before the promise is made: making it takes the sender out of the current message.
      pending.caller = caf::actor_cast<caf::actor_addr>(self->current_sender());
      pending.promise = self->make_response_promise<tool_result>();
      pending.call = std::move(call);
      pending.blob_dir = std::move(blob_dir);
      pending.session = std::move(session);
      auto promise = pending.promise;
      if (s.starting) {
        s.queued.push_back(std::move(pending));
      } else if (s.alive) {
        send_call(self, std::move(pending));
      } else if (s.ever_connected && s.report.status == mcp_status::connected) {
        // It died since its last call: started again, and the call waits for it.
        ++s.restarts;
        spdlog::info("starting MCP server {} again ({} of {})", server_name(self), s.restarts,
                     s.setup.max_restarts);
        s.queued.push_back(std::move(pending));
        start(self);
      } else {
        promise.deliver(error_result(quoted_name(self) + " is not available: " +
                                     (s.report.error.empty() ? "it failed" : s.report.error)));
      }
      return promise;
    },
    [=](cancel_atom, const std::string& call_id) {
      // The caller's own call of that id: another agent's call may have the same id.
      auto& s = self->state;
      auto caller = caf::actor_cast<caf::actor_addr>(self->current_sender());
      for (auto& [key, call] : s.calls)
        if (call.caller == caller && call.call.id == call_id) {
          // Copies: telling the server may find it stuck and clear `calls` under the loop.
          auto found = key;
          auto rpc = call.rpc;
          cancel_on_server(self, rpc, "interrupted by the user");
          answer_call(self, found, interrupted_result());
          return;
        }
      for (auto i = s.queued.begin(); i != s.queued.end(); ++i)
        if (i->caller == caller && i->call.id == call_id) {
          i->promise.deliver(interrupted_result());
          s.queued.erase(i);
          return;
        }
    },
    [=](mcp_atom, uint64_t serial, std::string& line) {
      // Serial 0: from the client an sdk server lives in, whatever its connection.
      if (serial == self->state.connection ||
          (serial == 0 && self->state.setup.config.transport == mcp_transport::sdk)) {
        if (line.size() == 1 && line[0] == dropped_line)
          take_oversized(self);
        else
          take_text(self, line);
      }
    },
    [=](exited_atom, uint64_t serial, int32_t code, std::string& tail) {
      if (serial == self->state.connection && self->state.alive)
        take_exit(self, code, tail);
    },
    [=](due_atom, uint64_t serial) { take_due(self, serial); },
    [=](http_response_head& head) { take_head(self, head); },
    [=](http_body_chunk& chunk) { take_chunk(self, chunk); },
    [=](http_transfer_done& done) { take_done(self, done); },
  };
}

} // namespace

std::string describe_mcp_report(const mcp_server_report& report, bool with_tools) {
  std::string text = " - " + std::string{to_string(report.status)};
  if (report.status == mcp_status::failed && !report.error.empty())
    text += ": " + report.error;
  if (report.status == mcp_status::connected) {
    auto count = report.tools->size();
    text += ", " + std::to_string(count) + (count == 1 ? " tool" : " tools");
    if (!report.server_name.empty())
      text += " (" + report.server_name +
              (report.server_version.empty() ? "" : " " + report.server_version) + ")";
  }
  text += "\n";
  if (with_tools)
    for (auto& tool : *report.tools) {
      auto description = tool.description.substr(0, tool.description.find('\n'));
      if (description.size() > 100)
        description = description.substr(0, 97) + "...";
      text += "  " + mcp_tool_name(report.server, tool.name) +
              (description.empty() ? "" : "  " + description) + "\n";
    }
  return text;
}

mcp_server_actor spawn_mcp_server(caf::actor_system& sys, mcp_server_setup setup) {
  return sys.spawn(mcp_server, std::move(setup));
}

} // namespace troupe
