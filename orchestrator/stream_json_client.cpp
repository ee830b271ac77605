#include "orchestrator/stream_json_client.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>
#include <thread>
#include <tuple>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "protocol/bounded_json.hpp"
#include "store/ids.hpp"
#include "orchestrator/cli.hpp"
#include "orchestrator/model_flags.hpp"
#include "orchestrator/run_command.hpp"
#include "orchestrator/signals.hpp"
#include "tools/claude_code_names.hpp"

namespace troupe {

bool line_writer::write(std::string_view line) {
  std::lock_guard<std::mutex> lock{mutex_};
  if (closed_)
    return false;
  if (std::fwrite(line.data(), 1, line.size(), out_) != line.size() ||
      std::fputc('\n', out_) == EOF || std::fflush(out_) != 0)
    closed_ = true;
  return !closed_;
}

std::optional<std::string> line_reader::next(std::string* error) {
  char chunk[65536];
  auto fill = [&]() -> bool { // false at the end of input
    for (;;) {
      auto got = ::read(fd_, chunk, sizeof chunk);
      if (got < 0 && errno == EINTR)
        continue;
      if (got <= 0) {
        eof_ = true;
        return false;
      }
      buffer_.append(chunk, static_cast<size_t>(got));
      return true;
    }
  };
  for (;;) {
    auto newline = buffer_.find('\n');
    if (newline != std::string::npos && newline > max_line_) {
      buffer_.erase(0, newline + 1);
      if (error)
        *error = "a line of more than " + std::to_string(max_line_) + " bytes was skipped";
      continue;
    }
    if (newline != std::string::npos) {
      auto line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      if (!line.empty() && line.back() == '\r')
        line.pop_back();
      return line;
    }
    if (buffer_.size() > max_line_) {
      // Too long to hold: dropped up to its newline, which may be far off.
      if (error)
        *error = "a line of more than " + std::to_string(max_line_) + " bytes was skipped";
      for (;;) {
        buffer_.clear();
        if (!fill())
          return std::nullopt;
        if (auto end = buffer_.find('\n'); end != std::string::npos) {
          buffer_.erase(0, end + 1);
          break;
        }
      }
      continue;
    }
    if (eof_ || !fill()) {
      if (buffer_.empty())
        return std::nullopt;
      return std::exchange(buffer_, std::string{});
    }
  }
}

namespace {

std::string text_of(const nlohmann::json& content, std::string* error) {
  if (content.is_string())
    return content.get<std::string>();
  if (!content.is_array()) {
    *error = "a user message's content must be a string or an array of content blocks";
    return {};
  }
  std::string text;
  for (auto& block : content) {
    if (!block.is_object() || block.value("type", std::string{}) != "text" ||
        !block.contains("text") || !block["text"].is_string()) {
      *error = "troupe takes text content blocks only (got " +
               (block.is_object() ? "a \"" + block.value("type", std::string{"?"}) + "\" block"
                                  : std::string{"a block that is not an object"}) +
               ")";
      return {};
    }
    if (!text.empty())
      text += "\n\n";
    text += block["text"].get<std::string>();
  }
  return text;
}

std::string string_field(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

} // namespace

client_line parse_client_line(std::string_view line) {
  client_line out;
  auto parsed = parse_json_bounded(line);
  if (!parsed) {
    out.error = "not JSON: " + parsed.error();
    return out;
  }
  auto& json = *parsed;
  if (!json.is_object()) {
    out.error = "a line must be a JSON object";
    return out;
  }
  auto type = string_field(json, "type");
  if (type == "user") {
    out.subtype = "user"; // an invalid one is still a message its sender waits on
    auto message = json.find("message");
    if (message == json.end() || !message->is_object() || !message->contains("content")) {
      out.error = "a user line needs \"message\": {\"role\": \"user\", \"content\": …}";
      return out;
    }
    out.text = text_of((*message)["content"], &out.error);
    if (!out.error.empty())
      return out;
    if (out.text.empty()) {
      out.error = "the user message is empty";
      return out;
    }
    out.what = client_line::kind::user;
    return out;
  }
  if (type == "control_request") {
    out.request_id = string_field(json, "request_id");
    auto request = json.find("request");
    if (out.request_id.empty() || request == json.end() || !request->is_object()) {
      out.error = "a control_request needs a string \"request_id\" and a \"request\" object";
      return out;
    }
    out.subtype = string_field(*request, "subtype");
    out.body = *request;
    out.what = client_line::kind::control_request;
    return out;
  }
  if (type == "control_response") {
    auto response = json.find("response");
    if (response == json.end() || !response->is_object()) {
      out.error = "a control_response needs a \"response\" object";
      return out;
    }
    out.request_id = string_field(*response, "request_id");
    if (string_field(*response, "subtype") == "error")
      out.error = string_field(*response, "error");
    if (string_field(*response, "subtype") == "error" && out.error.empty())
      out.error = "the client failed";
    auto body = response->find("response");
    out.body = body != response->end() ? *body : nlohmann::json::object();
    out.what = client_line::kind::control_response;
    return out;
  }
  if (type == "control_cancel_request") {
    out.request_id = string_field(json, "request_id");
    out.what = client_line::kind::control_cancel;
    return out;
  }
  if (type == "keep_alive" || type == "update_environment_variables") {
    out.what = client_line::kind::ignored;
    return out;
  }
  out.error = type.empty() ? "a line needs a \"type\""
                           : "unknown line type \"" + type +
                               "\" (troupe reads user, control_request, control_response, "
                               "control_cancel_request and keep_alive)";
  return out;
}

expected<client_initialize> read_initialize(const nlohmann::json& request,
                                            const std::string& request_id) {
  client_initialize init;
  init.request_id = request_id;
  auto prompt = request.find("systemPrompt");
  if (prompt != request.end() && !prompt->is_null()) {
    if (prompt->is_string()) {
      init.system_prompt = prompt->get<std::string>();
    } else if (prompt->is_array()) {
      for (auto& part : *prompt) {
        if (!part.is_string())
          return failure{"initialize: systemPrompt must be a string or strings"};
        if (!init.system_prompt.empty() && !part.get<std::string>().empty())
          init.system_prompt += "\n\n";
        init.system_prompt += part.get<std::string>();
      }
    } else {
      return failure{"initialize: systemPrompt must be a string or strings"};
    }
  }
  if (auto append = request.find("appendSystemPrompt");
      append != request.end() && !append->is_null()) {
    if (!append->is_string())
      return failure{"initialize: appendSystemPrompt must be a string"};
    init.append_system_prompt = append->get<std::string>();
  }
  if (auto hooks = request.find("hooks"); hooks != request.end() && !hooks->is_null()) {
    if (!hooks->is_object())
      return failure{"initialize: hooks must be an object of events"};
    for (auto& [event_name, matchers] : hooks->items()) {
      hook_event event{};
      try {
        event = nlohmann::json(event_name).get<hook_event>();
      } catch (const nlohmann::json::exception&) {
        // The SDK knows events troupe has no place for (Notification, SubagentStop, …): their
        // hooks never fire here, and the session goes on.
        init.skipped_events.push_back(event_name);
        continue;
      }
      if (!matchers.is_array())
        return failure{"initialize: hooks." + event_name + " must be an array"};
      for (auto& matcher : matchers) {
        if (!matcher.is_object())
          return failure{"initialize: hooks." + event_name + " holds a matcher that is not an object"};
        auto ids = matcher.find("hookCallbackIds");
        if (ids == matcher.end() || !ids->is_array())
          return failure{"initialize: a matcher of hooks." + event_name +
                         " needs hookCallbackIds"};
        for (auto& id : *ids) {
          if (!id.is_string())
            return failure{"initialize: hook callback ids must be strings"};
          hook_command hook;
          hook.event = event;
          hook.matcher = string_field(matcher, "matcher");
          hook.callback_id = id.get<std::string>();
          hook.command = "(the client's hook " + hook.callback_id + ")";
          if (auto timeout = matcher.find("timeout");
              timeout != matcher.end() && timeout->is_number() && timeout->get<double>() > 0)
            hook.timeout = std::chrono::milliseconds{
              static_cast<int64_t>(timeout->get<double>() * 1000)};
          init.hooks.push_back(std::move(hook));
        }
      }
    }
  }
  if (auto agents = request.find("agents"); agents != request.end() && !agents->is_null()) {
    if (!agents->is_object())
      return failure{"initialize: agents must be an object of agent definitions"};
    for (auto& [name, definition] : agents->items()) {
      auto where = "initialize: agents." + name;
      if (!definition.is_object() || string_field(definition, "description").empty() ||
          string_field(definition, "prompt").empty())
        return failure{where + " needs a description and a prompt"};
      agent_type type;
      type.name = name;
      type.description = string_field(definition, "description");
      type.prompt = string_field(definition, "prompt");
      type.file = "(the client's initialize request)";
      for (auto [key, into] : {std::pair{"tools", &type.tools},
                               std::pair{"disallowedTools", &type.disallowed_tools}}) {
        auto list = definition.find(key);
        if (list == definition.end() || list->is_null())
          continue;
        if (!list->is_array())
          return failure{where + "." + key + " must be an array of tool names"};
        for (auto& tool : *list) {
          auto own = tool.is_string() ? troupe_tool_name(tool.get<std::string>()) : std::nullopt;
          if (!own)
            return failure{where + "." + key + ": unknown tool " + tool.dump()};
          into->push_back(*own);
        }
      }
      auto model = string_field(definition, "model");
      if (!model.empty() && model != "inherit") {
        auto qualified = qualified_model_spec(model);
        if (!qualified)
          return failure{where + ".model: " + qualified.error()};
        type.model = *qualified;
      }
      init.agents.push_back(std::move(type));
    }
  }
  if (auto servers = request.find("mcpServers"); servers != request.end() && !servers->is_null()) {
    if (!servers->is_object())
      return failure{"initialize: mcpServers must be an object of servers by name"};
    init.mcp_servers_sent = true;
    for (auto& [name, entry] : servers->items()) {
      auto server = parse_mcp_server(name, entry, "the client's initialize (mcpServers)");
      if (!server)
        return failure{"initialize: " + server.error()};
      init.mcp_servers.push_back(std::move(*server));
    }
  }
  if (auto sdk = request.find("sdkMcpServers"); sdk != request.end() && !sdk->is_null()) {
    if (!sdk->is_array())
      return failure{"initialize: sdkMcpServers must be an array of server names"};
    for (auto& name : *sdk) {
      if (!name.is_string())
        return failure{"initialize: sdkMcpServers must be an array of server names"};
      // The name rules of every server's (mcp__<server>__<tool> must lead back to it).
      auto checked = parse_mcp_server(name.get<std::string>(), {{"type", "sdk"}},
                                      "initialize: sdkMcpServers");
      if (!checked)
        return failure{checked.error()};
      init.sdk_mcp_servers.push_back(name.get<std::string>());
    }
  }
  return init;
}

nlohmann::json control_success(const std::string& request_id, nlohmann::json response) {
  return {{"type", "control_response"},
          {"response",
           {{"subtype", "success"}, {"request_id", request_id}, {"response", std::move(response)}}}};
}

nlohmann::json control_failure(const std::string& request_id, const std::string& error) {
  return {{"type", "control_response"},
          {"response", {{"subtype", "error"}, {"request_id", request_id}, {"error", error}}}};
}

std::optional<std::string> troupe_mode_name(const std::string& mode) {
  if (auto known = parse_permission_mode(mode))
    return std::string{to_string(*known)};
  return std::nullopt;
}



namespace {

/// A request troupe put to the client, waiting for its control_response.
struct pending_ask {
  std::string tool; // troupe's name of the call's tool
  caf::typed_response_promise<permission_verdict> promise;
};

struct stream_client_state {
  stream_client_setup setup;
  session_actor session;
  uint64_t next_request = 0;
  std::map<std::string, pending_ask> asks;
  std::map<std::string, caf::typed_response_promise<hook_process_result>> hooks;
  /// mcp_message requests for the client's own MCP servers, with the JSON-RPC id they carry.
  std::map<std::string, std::pair<caf::typed_response_promise<nlohmann::json>, nlohmann::json>>
    mcp_requests;
  /// Every MCP server of the run (mcp_status), the client's own among them.
  std::map<std::string, mcp_server_actor> mcp_servers;
  /// stdin ended before the session came: its end is taken once the early lines are.
  bool ended_early = false;
  /// Lines that came before the session did: stdin is read from the launch on, while the MCP
  /// servers start (the answers to troupe's own requests are taken at once, not held here).
  std::vector<std::string> early;
  /// stdin ended: nobody can answer a request any more.
  bool input_ended = false;
  /// The session's id, for lines the front end writes itself.
  std::string session_id;
};

using client_ptr = stream_client_actor::stateful_pointer<stream_client_state>;

void send_line(client_ptr self, const nlohmann::json& line) {
  self->state.setup.out->write(line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void warn(const std::string& what) { std::fprintf(stderr, "troupe: stdin: %s\n", what.c_str()); }

// A control request from the client that the session carries out; the answer comes back as
// the control_response.
void ask_session(client_ptr self, const std::string& request_id, control_command command,
                 const std::string& arg,
                 std::function<nlohmann::json(const control_reply&)> shape) {
  self->request(self->state.session, std::chrono::seconds{30}, control_atom::value, command, arg)
    .then(
      [=](const control_reply& reply) {
        if (reply.status != control_status::ok)
          send_line(self, control_failure(request_id, reply.text));
        else
          send_line(self, control_success(request_id, shape(reply)));
      },
      [=](caf::error& err) {
        send_line(self, control_failure(request_id, "the session did not answer: " +
                                                      self->system().render(err)));
      });
}

// mcp_status: every server of the run as Claude Code lists them, once each has said how it
// stands.
void answer_mcp_status(client_ptr self, const std::string& id) {
  auto& servers = self->state.mcp_servers;
  if (servers.empty()) {
    send_line(self, control_success(id, {{"mcpServers", nlohmann::json::array()}}));
    return;
  }
  struct gathering {
    std::map<std::string, nlohmann::json> entries;
    size_t left = 0;
  };
  auto gathered = std::make_shared<gathering>();
  gathered->left = servers.size();
  for (auto& [name, server] : servers) {
    auto take = [=, name = name](nlohmann::json entry) {
      gathered->entries[name] = std::move(entry);
      if (--gathered->left > 0)
        return;
      auto list = nlohmann::json::array();
      for (auto& [each, listed] : gathered->entries)
        list.push_back(std::move(listed));
      send_line(self, control_success(id, {{"mcpServers", std::move(list)}}));
    };
    self->request(server, std::chrono::seconds{5}, list_atom::value, int64_t{0})
      .then(
        [=](const mcp_server_report& report) {
          nlohmann::json entry = {{"name", report.server}, {"status", to_string(report.status)}};
          if (!report.server_name.empty())
            entry["serverInfo"] = {{"name", report.server_name},
                                   {"version", report.server_version}};
          if (!report.error.empty())
            entry["error"] = report.error;
          auto tools = nlohmann::json::array();
          for (auto& tool : *report.tools)
            tools.push_back({{"name", tool.name}, {"description", tool.description}});
          entry["tools"] = std::move(tools);
          take(std::move(entry));
        },
        [=](caf::error& err) {
          take({{"name", name}, {"status", "failed"}, {"error", self->system().render(err)}});
        });
  }
}

void on_control_request(client_ptr self, const client_line& line) {
  auto& st = self->state;
  const auto& id = line.request_id;
  const auto& body = line.body;
  if (line.subtype == "initialize") {
    send_line(self, control_failure(id, "the session is initialized already: initialize must "
                                        "be the first line"));
  } else if (line.subtype == "interrupt") {
    caf::anon_send<caf::message_priority::high>(st.session, interrupt_atom::value);
    send_line(self, control_success(id));
  } else if (line.subtype == "set_permission_mode") {
    auto mode = troupe_mode_name(string_field(body, "mode"));
    if (!mode) {
      send_line(self, control_failure(id, "unknown permission mode '" + string_field(body, "mode") +
                                            "': use default, acceptEdits, bypassPermissions, plan or dontAsk"));
      return;
    }
    ask_session(self, id, control_command::permission_mode, *mode, [](const control_reply& r) {
      return nlohmann::json{{"mode", claude_permission_mode(r.text)}};
    });
  } else if (line.subtype == "set_model") {
    auto model = string_field(body, "model");
    if (model.empty()) // the SDK's setModel() without one: back to the run's own
      model = st.setup.initialize_answer["models"][0].value("value", std::string{});
    ask_session(self, id, control_command::model, model,
                [](const control_reply&) { return nlohmann::json::object(); });
  } else if (line.subtype == "set_max_thinking_tokens") {
    send_line(self, control_success(id)); // troupe asks for no thinking budget
  } else if (line.subtype == "mcp_status") {
    answer_mcp_status(self, id);
  } else if (line.subtype == "mcp_message") {
    // A message from one of the client's own MCP servers (a notification: its tools changed).
    auto server = st.mcp_servers.find(string_field(body, "server_name"));
    auto message = body.find("message");
    if (server == st.mcp_servers.end() || message == body.end()) {
      send_line(self, control_failure(id, "no MCP server '" + string_field(body, "server_name") +
                                            "' in this run, or no message"));
      return;
    }
    self->send(server->second, mcp_atom::value, uint64_t{0},
               message->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    send_line(self, control_success(id, {{"mcp_response",
                                          {{"jsonrpc", "2.0"}, {"result", nlohmann::json::object()},
                                           {"id", 0}}}}));
  } else if (line.subtype == "get_context_usage") {
    ask_session(self, id, control_command::context_usage, "", [](const control_reply& r) {
      auto usage = parse_json_bounded(r.text);
      return usage ? *usage : nlohmann::json::object();
    });
  } else if (line.subtype == "stop_task") {
    auto task = string_field(body, "task_id");
    if (task.empty()) {
      send_line(self, control_failure(id, "stop_task needs a task_id"));
      return;
    }
    ask_session(self, id, control_command::stop_task, task,
                [](const control_reply& r) { return nlohmann::json{{"message", r.text}}; });
  } else {
    send_line(self, control_failure(id, "troupe does not support the control request '" +
                                          line.subtype + "'"));
  }
}

void on_control_response(client_ptr self, const client_line& line) {
  auto& st = self->state;
  if (auto ask = st.asks.find(line.request_id); ask != st.asks.end()) {
    permission_verdict verdict;
    const auto& body = line.body;
    auto behavior = string_field(body, "behavior");
    if (!line.error.empty()) {
      verdict.answer = permission_answer::no;
      verdict.message = "the client's permission check failed: " + line.error;
    } else if (behavior == "allow") {
      verdict.answer = permission_answer::yes;
      if (auto input = body.find("updatedInput"); input != body.end() && input->is_object())
        verdict.updated_input = troupe_tool_input(ask->second.tool, *input);
    } else {
      verdict.answer = permission_answer::no;
      verdict.message = string_field(body, "message");
      if (verdict.message.empty())
        verdict.message = behavior == "deny" ? "the client denied this call"
                                             : "the client's answer was neither allow nor deny";
      verdict.interrupt = body.value("interrupt", false);
    }
    ask->second.promise.deliver(std::move(verdict));
    st.asks.erase(ask);
    return;
  }
  if (auto hook = st.hooks.find(line.request_id); hook != st.hooks.end()) {
    hook_process_result result;
    if (!line.error.empty()) {
      result.exit_code = 1;
      result.err = line.error;
    } else {
      result.out = line.body.dump();
    }
    hook->second.deliver(std::move(result));
    st.hooks.erase(hook);
    return;
  }
  if (auto mcp = st.mcp_requests.find(line.request_id); mcp != st.mcp_requests.end()) {
    auto response = line.body.find("mcp_response");
    if (!line.error.empty() || response == line.body.end() || !response->is_object())
      mcp->second.first.deliver(mcp_error(mcp->second.second, -32603,
                                          line.error.empty()
                                            ? "the client's answer held no mcp_response"
                                            : line.error));
    else
      mcp->second.first.deliver(*response);
    st.mcp_requests.erase(mcp);
    return;
  }
  warn("a control_response for no request troupe sent: " + line.request_id);
}

void on_line(client_ptr self, const std::string& text) {
  auto line = parse_client_line(text);
  auto& st = self->state;
  switch (line.what) {
    case client_line::kind::user:
      self->send(st.session, submit_atom::value, make_input(line.text));
      break;
    case client_line::kind::control_request:
      on_control_request(self, line);
      break;
    case client_line::kind::control_response:
      on_control_response(self, line);
      break;
    case client_line::kind::control_cancel:
    case client_line::kind::ignored:
      break; // troupe answers every request at once: nothing to cancel
    case client_line::kind::invalid:
      warn(line.error + "; the line was skipped");
      if (line.subtype == "user") // its sender waits for a result: it gets one
        send_line(self, {{"type", "result"},
                         {"subtype", "error_during_execution"},
                         {"is_error", true},
                         {"errors", nlohmann::json::array({line.error})},
                         {"error", line.error},
                         {"result", ""},
                         {"num_turns", 0},
                         {"session_id", st.session_id},
                         {"uuid", new_message_id()}});
      break;
  }
}

std::string next_id(client_ptr self) {
  return "troupe_" + random_hex(6) + "_" + std::to_string(++self->state.next_request);
}

// stdin ended: what is still asked can never be answered now, and is refused, as later
// requests are; the session finishes what is queued, then ends.
void end_of_input(client_ptr self) {
  auto& st = self->state;
  st.input_ended = true;
  for (auto& [id, ask] : st.asks) {
    permission_verdict verdict;
    verdict.message = "the client's input ended before it answered";
    ask.promise.deliver(std::move(verdict));
  }
  st.asks.clear();
  for (auto& [id, hook] : st.hooks) {
    hook_process_result failed;
    failed.exit_code = 1;
    failed.err = "the client's input ended before it answered";
    hook.deliver(std::move(failed));
  }
  st.hooks.clear();
  for (auto& [id, mcp] : st.mcp_requests)
    mcp.first.deliver(mcp_error(mcp.second, -32603, "the client's input ended before it answered"));
  st.mcp_requests.clear();
  if (!st.session) {
    st.ended_early = true; // told to the session once it comes, after the lines before the end
    return;
  }
  self->request(st.session, std::chrono::seconds{30}, control_atom::value,
                control_command::end_input, std::string{})
    .then([](const control_reply&) {}, [](caf::error&) {});
}

stream_client_actor::behavior_type stream_client(client_ptr self, stream_client_setup setup) {
  self->state.setup = std::move(setup);
  return {
    [=](client_atom, const session_actor& session, const std::string& session_id) {
      auto& st = self->state;
      st.session = session;
      st.session_id = session_id;
      if (st.setup.initialize) {
        auto answer = st.setup.initialize_answer;
        answer["hooks_applied"] = true;
        if (st.setup.initialize->mcp_servers_sent)
          answer["mcp_servers_applied"] = true; // started with the run (or reported failed)
        send_line(self, control_success(st.setup.initialize->request_id, answer));
      }
      for (auto& line : std::exchange(st.early, {}))
        on_line(self, line);
      if (st.ended_early)
        end_of_input(self);
    },
    [=](client_atom, const std::string& line) {
      if (!self->state.session) {
        // The answers to troupe's own requests are taken at once: the MCP servers' start-up,
        // which the session's start waits for, needs them.
        if (auto parsed = parse_client_line(line);
            parsed.what == client_line::kind::control_response) {
          on_control_response(self, parsed);
          return;
        }
        self->state.early.push_back(line);
        return;
      }
      on_line(self, line);
    },
    [=](client_atom) { end_of_input(self); },
    [=](mcp_atom, const std::string& server,
        const nlohmann::json& message) -> caf::result<nlohmann::json> {
      auto& st = self->state;
      auto rpc_id = message.is_object() && message.contains("id") ? message["id"] : nlohmann::json{};
      if (st.input_ended)
        return mcp_error(rpc_id, -32603, "the client's input has ended");
      auto id = next_id(self);
      auto promise = self->make_response_promise<nlohmann::json>();
      st.mcp_requests.emplace(id, std::make_pair(promise, rpc_id));
      send_line(self, {{"type", "control_request"},
                       {"request_id", id},
                       {"request",
                        {{"subtype", "mcp_message"}, {"server_name", server}, {"message", message}}}});
      return promise;
    },
    [=](mcp_atom, const std::string& name, const mcp_server_actor& server) {
      self->state.mcp_servers[name] = server;
    },
    [=](ask_atom, const tool_call& call,
        const std::string& reason) -> caf::result<permission_verdict> {
      if (self->state.input_ended) {
        permission_verdict verdict;
        verdict.message = "the client's input has ended, so nobody can allow this call";
        return verdict;
      }
      auto id = next_id(self);
      auto promise = self->make_response_promise<permission_verdict>();
      self->state.asks.emplace(id, pending_ask{call.name, promise});
      send_line(self, {{"type", "control_request"},
                       {"request_id", id},
                       {"request",
                        {{"subtype", "can_use_tool"},
                         {"tool_name", claude_tool_name(call.name)},
                         {"input", claude_tool_input(call.name, call.input)},
                         {"tool_use_id", call.id},
                         {"decision_reason", reason},
                         {"permission_suggestions", nlohmann::json::array()}}}});
      return promise;
    },
    [=](hook_atom, const std::string& callback_id, const nlohmann::json& input,
        const std::string& tool_use_id) -> caf::result<hook_process_result> {
      if (self->state.input_ended) {
        hook_process_result failed;
        failed.exit_code = 1;
        failed.err = "the client's input has ended, so its hook cannot run";
        return failed;
      }
      auto id = next_id(self);
      auto promise = self->make_response_promise<hook_process_result>();
      self->state.hooks.emplace(id, promise);
      nlohmann::json request = {{"subtype", "hook_callback"},
                                {"callback_id", callback_id},
                                {"input", input}};
      request["tool_use_id"] = tool_use_id.empty() ? nlohmann::json{} : nlohmann::json(tool_use_id);
      send_line(self, {{"type", "control_request"}, {"request_id", id}, {"request", request}});
      return promise;
    },
  };
}

} // namespace

stream_client_actor spawn_stream_client(caf::actor_system& sys, stream_client_setup setup) {
  return sys.spawn(stream_client, std::move(setup));
}

namespace {

// The slash commands a client may send as a user message's text.
nlohmann::json slash_commands() {
  auto commands = nlohmann::json::array();
  for (auto [name, hint, what] :
       {std::tuple{"compact", "[instructions]", "summarise the conversation to free the context"},
        std::tuple{"model", "[NAME]", "show or switch the model"},
        std::tuple{"clear", "", "start the conversation afresh"},
        std::tuple{"undo", "", "take the last turn out of the context"},
        std::tuple{"tokens", "", "context size, usage and cost so far"},
        std::tuple{"agents", "", "the subagents of this session"},
        std::tuple{"mcp", "", "the MCP servers, their states and tools"},
        std::tuple{"rename", "NAME", "name the session"}})
    commands.push_back({{"name", name}, {"description", what}, {"argumentHint", hint}});
  return commands;
}

} // namespace

expected<client_run> open_client(caf::actor_system& sys, run_settings& settings,
                                 std::FILE* out) {
  client_run run;
  run.reader = std::make_shared<line_reader>(STDIN_FILENO);
  run.writer = std::make_shared<line_writer>(out);
  stream_client_setup setup;
  setup.out = run.writer;
  for (;;) {
    // Waiting for the client's first word, troupe still stops on a signal (no forwarder yet).
    for (;;) {
      pollfd ready{STDIN_FILENO, POLLIN, 0};
      if (::poll(&ready, 1, 100) != 0)
        break; // readable, ended or failed: the read says which
      if (termination_pending())
        return failure{client_interrupted};
    }
    std::string error;
    auto line = run.reader->next(&error);
    if (!error.empty())
      warn(error);
    if (!line)
      break; // no input at all: the session starts and ends with nothing to do
    if (line->find_first_not_of(" \t") == std::string::npos)
      continue;
    auto parsed = parse_client_line(*line);
    if (parsed.what == client_line::kind::control_request && parsed.subtype == "initialize") {
      auto init = read_initialize(parsed.body, parsed.request_id);
      if (!init)
        return failure{init.error()};
      settings.hook_commands.insert(settings.hook_commands.end(), init->hooks.begin(),
                                    init->hooks.end());
      if (!init->agents.empty()) {
        // The client's types over the workspace's of the same name.
        auto types = settings.subagent_types ? *settings.subagent_types : agent_types{};
        for (auto& type : init->agents) {
          auto same = std::find_if(types.begin(), types.end(),
                                   [&](const agent_type& t) { return t.name == type.name; });
          if (same != types.end())
            *same = type;
          else
            types.push_back(type);
        }
        settings.subagent_types = std::make_shared<const agent_types>(std::move(types));
      }
      // The SDK sends [""] when it was given no system prompt: troupe's own instructions stay.
      if (!init->system_prompt.empty())
        settings.custom_instructions = init->system_prompt;
      if (!init->append_system_prompt.empty())
        settings.extra_system += (settings.extra_system.empty() ? "" : "\n\n") +
                                 init->append_system_prompt;
      for (auto& name : init->skipped_events)
        warn("initialize: troupe has no " + name + " event; its hooks never run");
      run.sdk_mcp_servers = init->sdk_mcp_servers;
      run.mcp_servers = init->mcp_servers;
      setup.initialize = std::move(*init);
    } else {
      run.first_line = std::move(*line);
    }
    break;
  }
  auto mode = std::string{to_string(settings.permissions.mode)};
  setup.initialize_answer = {
    {"commands", slash_commands()},
    {"models", nlohmann::json::array({{{"value", settings.model_name},
                                       {"displayName", settings.model_name},
                                       {"description", "the model this session runs"}}})},
    {"output_style", "default"},
    {"available_output_styles", nlohmann::json::array({"default"})},
    {"account", nlohmann::json::object()},
    {"pid", static_cast<int64_t>(::getpid())}};
  run.actor = spawn_stream_client(sys, std::move(setup));
  settings.hook_callbacks = caf::actor_cast<hook_callback_actor>(run.actor);
  settings.mcp_client = run.actor;
  settings.render.report_turns = true;
  settings.render.init_extras = {{"apiKeySource", "none"},
                                 {"claude_code_version", troupe_version},
                                 {"troupe_version", troupe_version},
                                 {"permissionMode", claude_permission_mode(mode)},
                                 {"mcp_servers", nlohmann::json::array()},
                                 {"slash_commands", nlohmann::json::array()},
                                 {"output_style", "default"},
                                 {"agents", nlohmann::json::array()}};
  for (auto& command : slash_commands())
    settings.render.init_extras["slash_commands"].push_back(command["name"]);
  return run;
}

void read_client_input(client_run& client) {
  // The first line first: it was read before the launch, and waits for the session with the
  // lines that follow it.
  if (client.first_line)
    caf::anon_send(client.actor, client_atom::value, std::move(*client.first_line));
  client.first_line.reset();
  read_client_lines(client.reader, client.actor);
}

void start_client(client_run& client, session_actor session, const std::string& session_id) {
  caf::anon_send(client.actor, client_atom::value, std::move(session), session_id);
}

void read_client_lines(std::shared_ptr<line_reader> reader, stream_client_actor client) {
  std::thread{[reader, client] {
    for (;;) {
      std::string error;
      auto line = reader->next(&error);
      if (!error.empty())
        warn(error);
      if (!line)
        break;
      if (line->find_first_not_of(" \t") == std::string::npos)
        continue;
      caf::anon_send(client, client_atom::value, std::move(*line));
    }
    caf::anon_send(client, client_atom::value);
  }}.detach();
}

} // namespace troupe
