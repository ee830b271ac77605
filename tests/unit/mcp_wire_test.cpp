#include <doctest/doctest.h>

#include <map>

#include "tools/mcp_wire.hpp"

using namespace troupe;
using json = nlohmann::json;
using kind = mcp_incoming::kind;

namespace {

expected<mcp_server_config> server(const std::string& name, const std::string& entry) {
  return parse_mcp_server(name, json::parse(entry), "--mcp-config");
}

std::string server_error(const std::string& name, const std::string& entry) {
  auto parsed = server(name, entry);
  REQUIRE_FALSE(parsed);
  return parsed.error();
}

std::function<std::optional<std::string>(const std::string&)> variables(
  std::map<std::string, std::string> set) {
  return [set = std::move(set)](const std::string& name) -> std::optional<std::string> {
    auto found = set.find(name);
    if (found == set.end())
      return std::nullopt;
    return found->second;
  };
}

mcp_incoming one_message(std::string_view text) {
  auto all = read_mcp_message(text);
  REQUIRE(all.size() == 1);
  return all.front();
}

// Records what was saved, answers with a path (or "" to say it was not saved).
struct blob_recorder {
  std::vector<std::pair<std::string, std::string>> saved;
  std::string path = "/tmp/blob.bin";
  std::function<std::string(const std::string&, const std::string&)> saver() {
    return [this](const std::string& mime, const std::string& data) {
      saved.emplace_back(mime, data);
      return path;
    };
  }
};

tool_result render(const std::string& result, blob_recorder* blobs = nullptr) {
  blob_recorder none;
  return render_mcp_call_result(json::parse(result), (blobs ? blobs : &none)->saver());
}

tool_result answer(std::string output, bool is_error = false) {
  tool_result result;
  result.output = std::move(output);
  result.is_error = is_error;
  result.exit_code = is_error ? 1 : 0;
  return result;
}

} // namespace

TEST_CASE("a stdio server is a command with its arguments, variables and directory") {
  auto parsed = server("fs", R"js({"command": "npx", "args": ["-y", "server-fs", "/tmp"],
                                   "env": {"TOKEN": "t", "EMPTY": ""}, "cwd": "/srv",
                                   "unknown": {"ignored": true}})js");
  REQUIRE_MESSAGE(parsed, parsed.error());
  mcp_server_config expected_config;
  expected_config.name = "fs";
  expected_config.command = "npx";
  expected_config.args = {"-y", "server-fs", "/tmp"};
  expected_config.env = {{"EMPTY", ""}, {"TOKEN", "t"}};
  expected_config.cwd = "/srv";
  expected_config.source = "--mcp-config";
  CHECK(parsed->name == expected_config.name);
  CHECK(parsed->transport == mcp_transport::stdio);
  CHECK(parsed->command == expected_config.command);
  CHECK(parsed->args == expected_config.args);
  CHECK(parsed->env == expected_config.env);
  CHECK(parsed->cwd == expected_config.cwd);
  CHECK(parsed->url.empty());
  CHECK(parsed->headers.empty());
  CHECK_FALSE(parsed->per_agent);
  CHECK(parsed->source == expected_config.source);

  auto typed = server("a-b_1", R"js({"type": "stdio", "command": "x", "scope": "agent"})js");
  REQUIRE(typed);
  CHECK(typed->per_agent);
  CHECK(typed->args.empty());
  CHECK(server("p", R"js({"command": "x", "scope": "process"})js"));
}

TEST_CASE("an http server is a Streamable HTTP endpoint with its headers") {
  for (auto* type : {"http", "streamable-http"}) {
    CAPTURE(type);
    auto parsed = server("web", std::string{R"js({"type": ")js"} + type +
                                  R"js(", "url": "https://example.com/mcp",
                                         "headers": {"Authorization": "Bearer x", "X-A": "1"}})js");
    REQUIRE_MESSAGE(parsed, parsed.error());
    CHECK(parsed->transport == mcp_transport::http);
    CHECK(parsed->url == "https://example.com/mcp");
    CHECK(parsed->headers == std::vector<std::pair<std::string, std::string>>{
                               {"Authorization", "Bearer x"}, {"X-A", "1"}});
    CHECK(parsed->command.empty());
  }
  CHECK(server("local", R"js({"type": "http", "url": "HTTP://127.0.0.1:8080/mcp"})js"));
}

TEST_CASE("a server entry's errors name the source, the server and the field") {
  CHECK(server_error("fs", R"js({"command": "x", "args": "-y"})js") ==
        "--mcp-config: mcpServers.fs.args must be an array of strings");
  CHECK(server_error("fs", R"js({"command": "x", "args": ["a", 1]})js") ==
        "--mcp-config: mcpServers.fs.args must be an array of strings");
  CHECK(server_error("fs", R"js({"command": ""})js") ==
        "--mcp-config: mcpServers.fs.command must be a program to start (a non-empty string)");
  CHECK(server_error("fs", R"js({"command": ["npx"]})js") ==
        "--mcp-config: mcpServers.fs.command must be a program to start (a non-empty string)");
  CHECK(server_error("fs", R"js({"type": "stdio"})js") ==
        "--mcp-config: mcpServers.fs.command must be a program to start (a non-empty string)");
  CHECK(server_error("fs", R"js({"command": "x", "env": ["A=1"]})js") ==
        "--mcp-config: mcpServers.fs.env must be an object of strings");
  CHECK(server_error("fs", R"js({"command": "x", "env": {"A": 1}})js") ==
        "--mcp-config: mcpServers.fs.env.A must be a string");
  CHECK(server_error("fs", R"js({"command": "x", "env": {"A=B": "1"}})js") ==
        "--mcp-config: mcpServers.fs.env: \"A=B\" is not a variable's name");
  CHECK(server_error("fs", R"js({"command": "x", "env": {"": "1"}})js") ==
        "--mcp-config: mcpServers.fs.env: \"\" is not a variable's name");
  CHECK(server_error("fs", R"js({"command": "x", "cwd": 7})js") ==
        "--mcp-config: mcpServers.fs.cwd must be a string");
  CHECK(server_error("fs", R"js({"command": "x", "scope": "session"})js") ==
        "--mcp-config: mcpServers.fs.scope must be \"process\" or \"agent\"");
  CHECK(server_error("fs", R"js({"command": "x", "scope": null})js") ==
        "--mcp-config: mcpServers.fs.scope must be \"process\" or \"agent\"");
  CHECK(server_error("fs", "[]") == "--mcp-config: mcpServers.fs must be an object");
  CHECK(server_error("fs", "{}") ==
        "--mcp-config: mcpServers.fs needs \"command\" (a program to start) or \"type\": "
        "\"http\" and \"url\"");
  CHECK(server_error("web", R"js({"url": "https://x"})js") ==
        "--mcp-config: mcpServers.web: a server with \"url\" needs \"type\": \"http\"");
  CHECK(server_error("web", R"js({"type": "sse", "url": "https://x/sse"})js") ==
        "--mcp-config: mcpServers.web: \"type\": \"sse\" is the deprecated HTTP+SSE transport, "
        "which troupe does not support; use the server's Streamable HTTP endpoint with "
        "\"type\": \"http\"");
  CHECK(server_error("web", R"js({"type": "ws", "url": "ws://x"})js") ==
        "--mcp-config: mcpServers.web.type \"ws\" is not a transport troupe has (\"stdio\" or "
        "\"http\")");
  CHECK(server_error("web", R"js({"type": 1, "command": "x"})js") ==
        "--mcp-config: mcpServers.web.type 1 is not a transport troupe has (\"stdio\" or "
        "\"http\")");
  CHECK(server_error("web", R"js({"type": "http"})js") ==
        "--mcp-config: mcpServers.web.url must be an http:// or https:// address");
  for (auto* url : {R"js("file:///etc/passwd")js", R"js("https://")js", R"js("ftp://x")js",
                    R"js("https://a b")js", R"js("https://a\r\nX: y")js", "5"}) {
    CAPTURE(url);
    auto error = server_error("web", std::string{R"js({"type": "http", "url": )js"} + url + "}");
    CHECK(error.find("mcpServers.web.url must be") != std::string::npos);
  }
  CHECK(server_error("web", R"js({"type": "http", "url": "https://x", "headers": []})js") ==
        "--mcp-config: mcpServers.web.headers must be an object of strings");
  CHECK(server_error("web", R"js({"type": "http", "url": "https://x", "headers": {"A": 1}})js") ==
        "--mcp-config: mcpServers.web.headers.A must be a string");
  // A header is one line: a value or a name that breaks it would smuggle in another.
  CHECK(server_error("web", R"js({"type": "http", "url": "https://x",
                                   "headers": {"A": "1\r\nHost: evil"}})js") ==
        "--mcp-config: mcpServers.web.headers.A: not a header's name, or a value with a line "
        "break");
  CHECK_FALSE(
    server("web", R"js({"type": "http", "url": "https://x", "headers": {"A B": "1"}})js"));
  CHECK_FALSE(server("web", R"js({"type": "http", "url": "https://x", "headers": {"": "1"}})js"));
  // A NUL would cut the string where execve reads it.
  CHECK(server_error("fs", R"js({"command": "sh\u0000-c"})js") ==
        "--mcp-config: mcpServers.fs.command must be a program to start (a non-empty string)");
  CHECK_FALSE(server("fs", R"js({"command": "x", "args": ["a\u0000b"]})js"));
  CHECK_FALSE(server("fs", R"js({"command": "x", "env": {"A": "\u0000"}})js"));
}

TEST_CASE("a server's name is what mcp__<server>__<tool> can hold") {
  CHECK(server_error("a__b", R"js({"command": "x"})js") ==
        "--mcp-config: the MCP server name \"a__b\" must be letters, digits, '_' and '-', "
        "without \"__\" (it becomes part of mcp__<server>__<tool>)");
  for (auto* bad : {"", "a b", "a.b", "fs/x", "__", "é", "a\nb"}) {
    CAPTURE(bad);
    CHECK_FALSE(server(bad, R"js({"command": "x"})js"));
  }
  // Control characters in a bad name do not reach the message as they are.
  CHECK(server_error("a\nb", R"js({"command": "x"})js").find('\n') == std::string::npos);
  CHECK(server("_", R"js({"command": "x"})js"));
  CHECK(server("A-9", R"js({"command": "x"})js"));
}

TEST_CASE("${VAR} and ${VAR:-default} expand, a lone $ stays") {
  auto lookup = variables({{"HOME", "/home/u"}, {"EMPTY", ""}, {"A", "x}y"}});
  CHECK(*expand_mcp_variables("${HOME}/bin", lookup) == "/home/u/bin");
  CHECK(*expand_mcp_variables("${MISSING:-/opt}/bin", lookup) == "/opt/bin");
  CHECK(expand_mcp_variables("${MISSING:-}", lookup)->empty());
  CHECK(*expand_mcp_variables("${HOME:-/opt}", lookup) == "/home/u");
  // Set to nothing is set (Claude Code's rule, not the shell's).
  CHECK(*expand_mcp_variables("[${EMPTY:-d}]", lookup) == "[]");
  CHECK(*expand_mcp_variables("$HOME $ $$ ${A}${A}", lookup) == "$HOME $ $$ x}yx}y");
  CHECK(*expand_mcp_variables("cost: 5$", lookup) == "cost: 5$");
  CHECK(expand_mcp_variables("", lookup)->empty());
  // A value is not expanded again.
  auto nested = variables({{"X", "${HOME}"}});
  CHECK(*expand_mcp_variables("${X}", nested) == "${HOME}");
  CHECK(*expand_mcp_variables("${MISSING:-a:-b}", lookup) == "a:-b");

  auto unset = expand_mcp_variables("Bearer ${TOKEN}", lookup);
  REQUIRE_FALSE(unset);
  CHECK(unset.error() == "the variable TOKEN is not set (${TOKEN:-DEFAULT} gives a default)");
  auto open = expand_mcp_variables("${HOME", lookup);
  REQUIRE_FALSE(open);
  CHECK(open.error() == "a ${ without its closing }");
  CHECK_FALSE(expand_mcp_variables("ok ${HOME} then ${", lookup));
  // The text is not repeated in the error: it may hold a token.
  CHECK(expand_mcp_variables("Bearer sk-123 ${TOKEN", lookup).error().find("sk-123") ==
        std::string::npos);
  CHECK_FALSE(expand_mcp_variables("${}", lookup));
  CHECK_FALSE(expand_mcp_variables("${:-x}", lookup));
}

TEST_CASE("the messages troupe sends are JSON-RPC 2.0") {
  CHECK(mcp_request(1, "tools/list") ==
        json::parse(R"js({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})js"));
  CHECK(mcp_request(7, "tools/call", {{"name", "x"}}) ==
        json::parse(R"js({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                          "params": {"name": "x"}})js"));
  CHECK(mcp_notification("notifications/initialized") ==
        json::parse(R"js({"jsonrpc": "2.0", "method": "notifications/initialized"})js"));
  CHECK(mcp_notification("notifications/cancelled", {{"requestId", 3}}) ==
        json::parse(R"js({"jsonrpc": "2.0", "method": "notifications/cancelled",
                          "params": {"requestId": 3}})js"));
  CHECK(mcp_result("p1", json::object()) ==
        json::parse(R"js({"jsonrpc": "2.0", "id": "p1", "result": {}})js"));
  CHECK(mcp_error(4, -32601, "Method not found") ==
        json::parse(R"js({"jsonrpc": "2.0", "id": 4,
                          "error": {"code": -32601, "message": "Method not found"}})js"));
  CHECK(mcp_initialize_params("1.2.3") ==
        json::parse(R"js({"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "troupe", "version": "1.2.3"}})js"));
}

TEST_CASE("initialize's answer must agree on a protocol version troupe speaks") {
  auto info = read_initialize_result(json::parse(R"js({
    "protocolVersion": "2025-06-18",
    "capabilities": {"tools": {"listChanged": true}, "logging": {}},
    "serverInfo": {"name": "fs", "version": "0.6"},
    "instructions": "Use read_file for files."})js"));
  REQUIRE_MESSAGE(info, info.error());
  CHECK(info->protocol_version == "2025-06-18");
  CHECK(info->name == "fs");
  CHECK(info->version == "0.6");
  CHECK(info->tools);
  CHECK(info->tools_list_changed);
  CHECK(info->instructions == "Use read_file for files.");

  auto bare = read_initialize_result(json::parse(R"js({"protocolVersion": "2024-11-05"})js"));
  REQUIRE(bare);
  CHECK_FALSE(bare->tools);
  CHECK_FALSE(bare->tools_list_changed);
  CHECK(bare->name.empty());

  // Wrong types are read as absent, never thrown on.
  auto odd = read_initialize_result(json::parse(R"js({"protocolVersion": "2025-03-26",
    "capabilities": {"tools": {"listChanged": "yes"}}, "serverInfo": {"name": 5},
    "instructions": ["x"]})js"));
  REQUIRE(odd);
  CHECK(odd->tools);
  CHECK_FALSE(odd->tools_list_changed);
  CHECK(odd->name.empty());
  CHECK(odd->instructions.empty());
  CHECK(read_initialize_result(json::parse(R"js({"protocolVersion": "2025-11-25",
    "capabilities": "all", "serverInfo": []})js")));

  auto future = read_initialize_result(json::parse(R"js({"protocolVersion": "2099-01-01"})js"));
  REQUIRE_FALSE(future);
  CHECK(future.error() == "the server speaks MCP protocol version 2099-01-01; troupe speaks "
                          "2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05");
  auto numeric = read_initialize_result(json::parse(R"js({"protocolVersion": 2025})js"));
  REQUIRE_FALSE(numeric);
  CHECK(numeric.error().find("version 2025;") != std::string::npos);
  auto multiline = read_initialize_result(json::parse(R"js({"protocolVersion": "a\nb"})js"));
  REQUIRE_FALSE(multiline);
  CHECK(multiline.error().find('\n') == std::string::npos);
  CHECK_FALSE(read_initialize_result(json::parse("{}")));
  CHECK_FALSE(read_initialize_result(json::parse("[]")));
  CHECK_FALSE(read_initialize_result(json::parse("null")));
}

TEST_CASE("a tools/list page: tools with names, a schema for each, the next cursor") {
  auto page = read_tools_page(json::parse(R"js({"tools": [
    {"name": "read_file", "description": "Reads a file.",
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
     "annotations": {"readOnlyHint": true}},
    {"name": "bare"},
    {"description": "no name"},
    {"name": 42},
    {"name": ""},
    "not an object",
    {"name": "odd", "description": 7, "inputSchema": "x", "annotations": {"readOnlyHint": 1}},
    {"name": "read_file", "description": "a second one with the same name"},
    {"name": "read.file", "description": "called as the first one is"}
  ], "nextCursor": "page-2"})js"));
  REQUIRE_MESSAGE(page, page.error());
  mcp_tool read_file;
  read_file.name = "read_file";
  read_file.description = "Reads a file.";
  read_file.input_schema =
    json::parse(R"js({"type": "object", "properties": {"path": {"type": "string"}}})js");
  read_file.read_only_hint = true;
  mcp_tool bare;
  bare.name = "bare";
  bare.input_schema = {{"type", "object"}};
  mcp_tool odd;
  odd.name = "odd";
  odd.input_schema = {{"type", "object"}};
  CHECK(page->tools == std::vector<mcp_tool>{read_file, bare, odd});
  CHECK(page->next_cursor == "page-2");

  auto last = read_tools_page(json::parse(R"js({"tools": [], "nextCursor": 3})js"));
  REQUIRE(last);
  CHECK(last->tools.empty());
  CHECK(last->next_cursor.empty());

  for (auto* bad : {"{}", R"js({"tools": {}})js", R"js({"tools": null})js", "[]", "\"x\""}) {
    CAPTURE(bad);
    CHECK_FALSE(read_tools_page(json::parse(bad)));
  }
}

TEST_CASE("incoming messages are classified: responses, errors, requests, notifications") {
  auto response = one_message(R"js({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}})js");
  CHECK(response.what == kind::response);
  CHECK(response.id == 1);
  CHECK(response.result == json::parse(R"js({"tools": []})js"));

  auto by_name = one_message(R"js({"jsonrpc": "2.0", "id": "a-1", "result": null})js");
  CHECK(by_name.what == kind::response);
  CHECK(by_name.id == "a-1");
  CHECK(by_name.result.is_null());

  auto error = one_message(
    R"js({"jsonrpc": "2.0", "id": 2, "error": {"code": -32602, "message": "Unknown tool"}})js");
  CHECK(error.what == kind::error);
  CHECK(error.id == 2);
  CHECK(error.error_code == -32602);
  CHECK(error.error_message == "Unknown tool");

  auto parse_error = one_message(
    R"js({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}})js");
  CHECK(parse_error.what == kind::error);
  CHECK(parse_error.id.is_null());

  // A malformed error still answers its request.
  auto sloppy = one_message(R"js({"jsonrpc": "2.0", "id": 3, "error": {"code": "x"}})js");
  CHECK(sloppy.what == kind::error);
  CHECK(sloppy.id == 3);
  CHECK(sloppy.error_code == 0);
  CHECK(sloppy.error_message == "the server's error says nothing");
  auto huge_code = one_message(
    R"js({"jsonrpc": "2.0", "id": 3, "error": {"code": 18446744073709551615, "message": "m"}})js");
  CHECK(huge_code.what == kind::error);
  CHECK(huge_code.error_code == 0);
  auto float_code = one_message(
    R"js({"jsonrpc": "2.0", "id": 3, "error": {"code": 1e300, "message": "m"}})js");
  CHECK(float_code.error_code == 0);

  auto ping = one_message(R"js({"jsonrpc": "2.0", "id": 9, "method": "ping"})js");
  CHECK(ping.what == kind::request);
  CHECK(ping.id == 9);
  CHECK(ping.method == "ping");
  CHECK(ping.params.is_null());

  auto progress = one_message(R"js({"jsonrpc": "2.0", "method": "notifications/progress",
                                    "params": {"progressToken": 1, "progress": 2}})js");
  CHECK(progress.what == kind::notification);
  CHECK(progress.method == "notifications/progress");
  CHECK(progress.params["progress"] == 2);
  CHECK(progress.id.is_null());
  auto null_id = one_message(R"js({"jsonrpc": "2.0", "id": null, "method": "x"})js");
  CHECK(null_id.what == kind::notification);

  // Huge ids stay as they came: they match no request of troupe's, nothing breaks.
  auto huge = one_message(R"js({"jsonrpc": "2.0", "id": 123456789012345678901234567890,
                                "result": {}})js");
  CHECK(huge.what == kind::response);
  CHECK(huge.id.is_number_float());
  auto big = one_message(R"js({"jsonrpc": "2.0", "id": 18446744073709551615, "result": {}})js");
  CHECK(big.what == kind::response);
}

TEST_CASE("what is not JSON-RPC 2.0 is invalid, and says why") {
  for (auto* text : {
         "", "not json", "{", "null", "42", "\"text\"", "[]", "[[]]",
         R"js({"id": 1, "result": {}})js",
         R"js({"jsonrpc": "1.0", "id": 1, "result": {}})js",
         R"js({"jsonrpc": 2.0, "id": 1, "result": {}})js",
         R"js({"jsonrpc": "2.0", "id": 1})js",
         R"js({"jsonrpc": "2.0"})js",
         R"js({"jsonrpc": "2.0", "result": {}})js",
         R"js({"jsonrpc": "2.0", "id": null, "result": {}})js",
         R"js({"jsonrpc": "2.0", "id": {"a": 1}, "result": {}})js",
         R"js({"jsonrpc": "2.0", "id": [1], "method": "ping"})js",
         R"js({"jsonrpc": "2.0", "id": true, "result": {}})js",
         R"js({"jsonrpc": "2.0", "method": 5})js",
         R"js({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "m"}})js",
         R"js({"jsonrpc": "2.0", "id": 1, "error": "boom"})js",
       }) {
    CAPTURE(text);
    auto all = read_mcp_message(text);
    REQUIRE(all.size() == 1);
    CHECK(all[0].what == kind::invalid);
    CHECK_FALSE(all[0].error_message.empty());
  }
  // Deeper than the bound is refused before a tree is built.
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto refused = one_message(deep);
  CHECK(refused.what == kind::invalid);
  CHECK(refused.error_message.find("nested deeper") != std::string::npos);
  std::string deep_params = R"js({"jsonrpc": "2.0", "method": "x", "params": )js" +
                            std::string(600, '[') + std::string(600, ']') + "}";
  CHECK(one_message(deep_params).what == kind::invalid);
}

TEST_CASE("a batch yields each of its messages, in order") {
  auto all = read_mcp_message(R"js([
    {"jsonrpc": "2.0", "id": 1, "result": {}},
    {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"},
    7,
    [{"jsonrpc": "2.0", "id": 2, "result": {}}],
    {"jsonrpc": "2.0", "id": "r", "method": "roots/list"}
  ])js");
  REQUIRE(all.size() == 5);
  CHECK(all[0].what == kind::response);
  CHECK(all[1].what == kind::notification);
  CHECK(all[1].method == "notifications/tools/list_changed");
  CHECK(all[2].what == kind::invalid);
  CHECK(all[3].what == kind::invalid); // batches do not nest
  CHECK(all[4].what == kind::request);
  CHECK(all[4].id == "r");
}

TEST_CASE("a call's text content reaches the model as it is") {
  CHECK(render(R"js({"content": [{"type": "text", "text": "one"},
                                 {"type": "text", "text": "two\nlines"}]})js") ==
        answer("one\ntwo\nlines"));
  CHECK(render(R"js({"content": [{"type": "text", "text": "no such file"}], "isError": true})js") ==
        answer("no such file", true));
  CHECK(render(R"js({"content": [{"type": "text", "text": "x"}], "isError": "yes"})js") ==
        answer("x"));
  CHECK(render(R"js({"content": []})js") == answer("[no content]"));
  CHECK(render(R"js({"content": [], "isError": true})js") == answer("[no content]", true));
}

TEST_CASE("images, audio and blobs go to files, never into the context") {
  blob_recorder blobs;
  CHECK(render(R"js({"content": [{"type": "image", "mimeType": "image/png", "data": "aGVsbG8="},
                                 {"type": "audio", "mimeType": "audio/wav", "data": "AAAA"}]})js",
               &blobs) == answer("[image image/png, 5 bytes: saved to /tmp/blob.bin]\n"
                                 "[audio audio/wav, 3 bytes: saved to /tmp/blob.bin]"));
  CHECK(blobs.saved == std::vector<std::pair<std::string, std::string>>{
                         {"image/png", "aGVsbG8="}, {"audio/wav", "AAAA"}});

  blob_recorder unsaved;
  unsaved.path.clear();
  CHECK(render(R"js({"content": [{"type": "image", "mimeType": "image/jpeg", "data": "aGk="}]})js",
               &unsaved) == answer("[image image/jpeg, 2 bytes: not saved]"));

  // A mime type that is not one (a path, a line break) is not passed on.
  blob_recorder odd;
  CHECK(render(R"js({"content": [
                 {"type": "image", "mimeType": "../../x\n[done]", "data": ""},
                 {"type": "image", "data": "="},
                 {"type": "image", "mimeType": "image/png"},
                 {"type": "image", "mimeType": "image/png", "data": 5}]})js",
               &odd) == answer("[image application/octet-stream, 0 bytes: saved to /tmp/blob.bin]\n"
                               "[image application/octet-stream, 0 bytes: saved to /tmp/blob.bin]\n"
                               "[image without data]\n[image without data]"));
  CHECK(odd.saved.size() == 2);
  CHECK(odd.saved[0].first == "application/octet-stream");

  blob_recorder embedded;
  CHECK(render(R"js({"content": [{"type": "resource", "resource":
                   {"uri": "file:///a.pdf", "mimeType": "application/pdf",
                    "blob": "AAAAAA=="}}]})js",
               &embedded) ==
        answer("[resource file:///a.pdf application/pdf, 4 bytes: saved to /tmp/blob.bin]"));
  CHECK(embedded.saved.size() == 1);
}

TEST_CASE("resources: links name where they are, embedded text is shown") {
  CHECK(render(R"js({"content": [{"type": "resource_link", "uri": "file:///r.md", "name": "r.md",
                                  "mimeType": "text/markdown",
                                  "description": "The readme."}]})js") ==
        answer("[resource r.md: file:///r.md (text/markdown)]\nThe readme."));
  CHECK(render(R"js({"content": [{"type": "resource_link", "uri": "https://x/y"}]})js") ==
        answer("[resource https://x/y]"));
  CHECK(render(R"js({"content": [{"type": "resource_link", "uri": "a\n]b", "name": 3}]})js") ==
        answer("[resource a ]b]"));
  CHECK(render(R"js({"content": [{"type": "resource", "resource":
                   {"uri": "file:///notes.txt", "mimeType": "text/plain",
                    "text": "hello"}}]})js") ==
        answer("[resource file:///notes.txt]\nhello"));
  CHECK(render(R"js({"content": [{"type": "resource", "resource": "x"}]})js") ==
        answer("[an embedded resource without its resource]"));
  CHECK(render(R"js({"content": [{"type": "resource", "resource": {"uri": "u"}}]})js") ==
        answer("[resource u without data]"));
}

TEST_CASE("blocks troupe cannot show are named, not dropped or thrown on") {
  CHECK(render(R"js({"content": [{"type": "video", "data": "x"}, 5, {"text": "t"},
                                 {"type": "text", "text": 5}, {"type": "text"}]})js") ==
        answer("[video content that troupe does not show]\n"
               "[a content block that is not an object]\n"
               "[a content block that troupe does not show]\n"
               "[a text block without text]\n[a text block without text]"));
}

TEST_CASE("structured content is added when no block is text") {
  CHECK(render(R"js({"content": [{"type": "text", "text": "{\"temp\": 21}"}],
                     "structuredContent": {"temp": 21}})js") == answer("{\"temp\": 21}"));
  // The filesystem server's shape: the text, and the same text wrapped as structured content.
  CHECK(render(R"js({"content": [{"type": "text", "text": "[FILE] a.txt"}],
                     "structuredContent": {"content": "[FILE] a.txt"}})js") ==
        answer("[FILE] a.txt"));
  CHECK(render(R"js({"content": [{"type": "image", "mimeType": "image/png", "data": "AAAA"}],
                     "structuredContent": {"temp": 21}})js")
          .output.find("{\"temp\":21}") != std::string::npos);
  CHECK(render(R"js({"structuredContent": {"temp": 21}})js") == answer("{\"temp\":21}"));
  CHECK(render(R"js({"content": "x", "structuredContent": [1, 2]})js") == answer("[1,2]"));
  CHECK(render(R"js({"content": [], "structuredContent": null})js") == answer("[no content]"));
}

TEST_CASE("a result that is not one is an error result") {
  for (auto* bad : {"{}", R"js({"content": "text"})js", R"js({"content": {"type": "text"}})js",
                    R"js({"structuredContent": null})js", R"js({"isError": false})js"})
    CHECK(render(bad) == answer("the MCP server's result has no content", true));
  for (auto* bad : {"[]", "null", "\"text\"", "3"})
    CHECK(render(bad) == answer("the MCP server's result is not an object", true));
  // No saver at all: nothing saved, nothing thrown.
  CHECK(render_mcp_call_result(json::parse(R"js({"content": [{"type": "image",
                                 "mimeType": "image/png", "data": "aGk="}]})js"),
                               nullptr) == answer("[image image/png, 2 bytes: not saved]"));
}

TEST_CASE("progress reads as PROGRESS/TOTAL: MESSAGE") {
  CHECK(describe_mcp_progress(json::parse(R"js({"progress": 3, "total": 10,
                                                "message": "Reading"})js")) == "3/10: Reading");
  CHECK(describe_mcp_progress(json::parse(R"js({"progress": 3, "message": "Reading"})js")) ==
        "3: Reading");
  CHECK(describe_mcp_progress(json::parse(R"js({"progress": 3, "total": 10})js")) == "3/10");
  CHECK(describe_mcp_progress(json::parse(R"js({"progress": 2.0, "total": 4.5})js")) == "2/4.5");
  CHECK(describe_mcp_progress(json::parse(R"js({"progress": 0.25})js")) == "0.25");
  CHECK(describe_mcp_progress(json::parse(R"js({"message": "a\nb"})js")) == "a b");
  CHECK(describe_mcp_progress(json::parse(R"js({"progress": "3", "total": 1})js")).empty());
  CHECK(describe_mcp_progress(json::parse(R"js({"progress": 1e300})js")) == "1e+300");
  CHECK(describe_mcp_progress(json::parse("[]")).empty());
  CHECK(describe_mcp_progress(json::parse("null")).empty());
}

TEST_CASE("a server's tool is offered as mcp__<server>__<tool>, never read-only") {
  mcp_tool tool;
  tool.name = "read.file";
  tool.input_schema = "not an object";
  tool.read_only_hint = true;
  auto spec = mcp_tool_spec("fs", tool);
  CHECK(spec.name == "mcp__fs__read_file");
  CHECK(spec.description == "Tool read.file of the MCP server fs.");
  CHECK(spec.input_schema == json{{"type", "object"}});
  CHECK(spec.kind == tool_kind::mcp);
  CHECK_FALSE(spec.read_only);
  CHECK(spec.block_names.empty());
}

TEST_CASE("a tool's name as the model calls it: sanitised, and cut at the providers' 64") {
  CHECK(mcp_tool_name("fs", "read_file") == "mcp__fs__read_file");
  CHECK(mcp_tool_name("my.tools", "a b/c") == "mcp__my_tools__a_b_c");
  auto long_name = mcp_tool_name("server", std::string(80, 'x'));
  CHECK(long_name.size() == 64);
  CHECK(long_name == "mcp__server__" + std::string(51, 'x'));
  CHECK(mcp_server_of(long_name) == "server");
  CHECK(mcp_server_of("mcp__fs") == "fs");
  CHECK(mcp_server_of("shell").empty());
}

TEST_CASE("a server's name must leave its tools' names room within 64 characters") {
  CHECK(parse_mcp_server(std::string(40, 's'), json{{"command", "x"}}, "--mcp-config"));
  auto long_name = parse_mcp_server(std::string(41, 's'), json{{"command", "x"}}, "--mcp-config");
  REQUIRE_FALSE(long_name);
  CHECK(long_name.error().find("longer than 40 characters") != std::string::npos);
}
