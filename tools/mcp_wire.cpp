#include "tools/mcp_wire.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <set>

#include "protocol/bounded_json.hpp"

namespace troupe {

namespace {

using json = nlohmann::json;

// What the server wrote can be anything: a dump never throws on bad UTF-8.
std::string dump_safely(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// A server's words inside a one-line marker ("[image …]", a version in an error): control
// characters would let them start lines of their own, and a long one is cut at a character.
std::string one_line(const std::string& text, size_t most = 200) {
  std::string line;
  for (char c : text)
    line += static_cast<unsigned char>(c) < 0x20 || c == '\x7f' ? ' ' : c;
  if (line.size() > most) {
    size_t cut = most;
    while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80)
      --cut;
    line = line.substr(0, cut) + "…";
  }
  return line;
}

std::string string_at(const json& object, const char* key) {
  auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : std::string{};
}

bool true_at(const json& object, const char* key) {
  auto found = object.find(key);
  return found != object.end() && found->is_boolean() && found->get<bool>();
}

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

// A NUL would end the string where execve or a header line reads it.
bool holds_nul(const std::string& text) { return text.find('\0') != std::string::npos; }

// RFC 9110's token: what a header's name may be made of.
bool header_name(const std::string& name) {
  if (name.empty())
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return name_char(c) || std::string_view{"!#$%&'*+.^`|~"}.find(c) != std::string_view::npos;
  });
}

bool header_value(const std::string& value) {
  return value.find_first_of(std::string_view{"\r\n\0", 3}) == std::string::npos;
}

bool starts_with_nocase(const std::string& text, std::string_view prefix) {
  if (text.size() < prefix.size())
    return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(text[i])) != prefix[i])
      return false;
  return true;
}

// RFC 6838's restricted names, type/subtype: safe to show and to pick a file extension by.
bool mime_type(const std::string& text) {
  auto slash = text.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == text.size() || text.size() > 255)
    return false;
  for (size_t i = 0; i < text.size(); ++i)
    if (i != slash && !name_char(text[i]) &&
        std::string_view{"!#$&^.+"}.find(text[i]) == std::string_view::npos)
      return false;
  return true;
}

struct server_fields {
  const std::string& prefix; // "SOURCE: mcpServers.NAME"
  const json& entry;

  std::optional<failure> string_field(const char* key, std::string& into) const {
    auto found = entry.find(key);
    if (found == entry.end())
      return std::nullopt;
    if (!found->is_string() || holds_nul(found->get<std::string>()))
      return failure{prefix + "." + key + " must be a string"};
    into = found->get<std::string>();
    return std::nullopt;
  }

  // An object of strings, in the order of its keys.
  std::optional<failure> string_map(const char* key,
                                    std::vector<std::pair<std::string, std::string>>& into) const {
    auto found = entry.find(key);
    if (found == entry.end())
      return std::nullopt;
    if (!found->is_object())
      return failure{prefix + "." + key + " must be an object of strings"};
    for (auto& [name, value] : found->items()) {
      if (!value.is_string() || holds_nul(value.get<std::string>()) || holds_nul(name))
        return failure{prefix + "." + key + "." + one_line(name) + " must be a string"};
      into.emplace_back(name, value.get<std::string>());
    }
    return std::nullopt;
  }
};

expected<mcp_server_config> parse_stdio(mcp_server_config config, const server_fields& fields) {
  auto& entry = fields.entry;
  auto& prefix = fields.prefix;
  if (auto bad = fields.string_field("command", config.command); bad || config.command.empty())
    return failure{prefix + ".command must be a program to start (a non-empty string)"};
  if (auto args = entry.find("args"); args != entry.end()) {
    if (!args->is_array())
      return failure{prefix + ".args must be an array of strings"};
    for (auto& arg : *args) {
      if (!arg.is_string() || holds_nul(arg.get<std::string>()))
        return failure{prefix + ".args must be an array of strings"};
      config.args.push_back(arg.get<std::string>());
    }
  }
  std::vector<std::pair<std::string, std::string>> env;
  if (auto bad = fields.string_map("env", env))
    return *bad;
  for (auto& [name, value] : env) {
    if (name.empty() || name.find('=') != std::string::npos)
      return failure{prefix + ".env: \"" + one_line(name) + "\" is not a variable's name"};
    config.env[name] = value;
  }
  std::string cwd;
  if (auto bad = fields.string_field("cwd", cwd))
    return *bad;
  config.cwd = cwd;
  return config;
}

expected<mcp_server_config> parse_http(mcp_server_config config, const server_fields& fields) {
  auto& prefix = fields.prefix;
  config.transport = mcp_transport::http;
  if (auto bad = fields.string_field("url", config.url))
    return *bad;
  auto scheme = starts_with_nocase(config.url, "https://") ? 8
                : starts_with_nocase(config.url, "http://") ? 7
                                                            : 0;
  if (scheme == 0 || config.url.size() == static_cast<size_t>(scheme) ||
      std::any_of(config.url.begin(), config.url.end(),
                  [](char c) { return static_cast<unsigned char>(c) <= 0x20 || c == '\x7f'; }))
    return failure{prefix + ".url must be an http:// or https:// address"};
  if (auto bad = fields.string_map("headers", config.headers))
    return *bad;
  for (auto& [name, value] : config.headers)
    if (!header_name(name) || !header_value(value))
      return failure{prefix + ".headers." + one_line(name) +
                     ": not a header's name, or a value with a line break"};
  return config;
}

} // namespace

const char* to_string(mcp_transport transport) {
  switch (transport) {
    case mcp_transport::http:
      return "http";
    case mcp_transport::sdk:
      return "sdk";
    default:
      return "stdio";
  }
}

std::string mcp_line(const nlohmann::json& message) { return dump_safely(message); }

expected<mcp_server_config> parse_mcp_server(const std::string& name, const nlohmann::json& entry,
                                             const std::string& source) {
  auto prefix = source + ": mcpServers." + one_line(name);
  if (name.empty() || name.find("__") != std::string::npos ||
      !std::all_of(name.begin(), name.end(), name_char))
    return failure{source + ": the MCP server name \"" + one_line(name) +
                   "\" must be letters, digits, '_' and '-', without \"__\" (it becomes part "
                   "of mcp__<server>__<tool>)"};
  if (name.size() > 40)
    return failure{source + ": the MCP server name \"" + one_line(name) +
                   "\" is longer than 40 characters (mcp__<server>__<tool> must fit the "
                   "providers' 64)"};
  if (!entry.is_object())
    return failure{prefix + " must be an object"};
  server_fields fields{prefix, entry};
  mcp_server_config config;
  config.name = name;
  config.source = source;
  if (auto scope = entry.find("scope"); scope != entry.end()) {
    if (*scope == "agent")
      config.per_agent = true;
    else if (*scope != "process")
      return failure{prefix + ".scope must be \"process\" or \"agent\""};
  }
  auto type = entry.find("type");
  if (type == entry.end()) {
    if (entry.contains("command"))
      return parse_stdio(std::move(config), fields);
    if (entry.contains("url"))
      return failure{prefix + ": a server with \"url\" needs \"type\": \"http\""};
    return failure{prefix + " needs \"command\" (a program to start) or \"type\": \"http\" and "
                            "\"url\""};
  }
  if (*type == "stdio")
    return parse_stdio(std::move(config), fields);
  if (*type == "http" || *type == "streamable-http")
    return parse_http(std::move(config), fields);
  if (*type == "sdk") {
    // A server inside the Agent SDK that started troupe: reached through its stream-json
    // client, so only a client run can start it.
    config.transport = mcp_transport::sdk;
    return config;
  }
  if (*type == "sse")
    return failure{prefix + ": \"type\": \"sse\" is the deprecated HTTP+SSE transport, which "
                            "troupe does not support; use the server's Streamable HTTP endpoint "
                            "with \"type\": \"http\""};
  return failure{prefix + ".type " + one_line(dump_safely(*type)) +
                 " is not a transport troupe has (\"stdio\" or \"http\")"};
}

expected<std::string> expand_mcp_variables(
  const std::string& text,
  const std::function<std::optional<std::string>(const std::string&)>& lookup) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    auto dollar = text.find("${", i);
    if (dollar == std::string::npos) {
      out.append(text, i, std::string::npos);
      break;
    }
    out.append(text, i, dollar - i);
    auto close = text.find('}', dollar + 2);
    // The text itself is not shown: it may hold a token.
    if (close == std::string::npos)
      return failure{"a ${ without its closing }"};
    auto inner = text.substr(dollar + 2, close - dollar - 2);
    auto split = inner.find(":-");
    auto name = inner.substr(0, split);
    if (name.empty())
      return failure{"a ${} that names no variable"};
    // As Claude Code: a variable set to "" is set; only an unset one takes the default.
    if (auto value = lookup(name))
      out += *value;
    else if (split != std::string::npos)
      out.append(inner, split + 2, std::string::npos);
    else
      return failure{"the variable " + one_line(name) + " is not set (${" + one_line(name) +
                     ":-DEFAULT} gives a default)"};
    i = close + 1;
  }
  return out;
}

nlohmann::json mcp_request(int64_t id, const std::string& method, nlohmann::json params) {
  json request{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null())
    request["params"] = std::move(params);
  return request;
}

nlohmann::json mcp_notification(const std::string& method, nlohmann::json params) {
  json notification{{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.is_null())
    notification["params"] = std::move(params);
  return notification;
}

nlohmann::json mcp_result(const nlohmann::json& id, nlohmann::json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

nlohmann::json mcp_error(const nlohmann::json& id, int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

nlohmann::json mcp_initialize_params(const std::string& version) {
  return {{"protocolVersion", mcp_protocol_versions.front()},
          {"capabilities", json::object()},
          {"clientInfo", {{"name", "troupe"}, {"version", version}}}};
}

expected<mcp_server_info> read_initialize_result(const nlohmann::json& result) {
  if (!result.is_object())
    return failure{"the server's initialize result is not an object"};
  mcp_server_info info;
  auto version = result.find("protocolVersion");
  if (version == result.end())
    return failure{"the server's initialize result names no protocolVersion"};
  info.protocol_version =
    version->is_string() ? version->get<std::string>() : dump_safely(*version);
  if (std::find(mcp_protocol_versions.begin(), mcp_protocol_versions.end(),
                info.protocol_version) == mcp_protocol_versions.end()) {
    std::string ours;
    for (auto& spoken : mcp_protocol_versions)
      ours += (ours.empty() ? "" : ", ") + spoken;
    return failure{"the server speaks MCP protocol version " + one_line(info.protocol_version) +
                   "; troupe speaks " + ours};
  }
  if (auto server = result.find("serverInfo"); server != result.end() && server->is_object()) {
    info.name = string_at(*server, "name");
    info.version = string_at(*server, "version");
  }
  if (auto caps = result.find("capabilities"); caps != result.end() && caps->is_object())
    if (auto tools = caps->find("tools"); tools != caps->end() && !tools->is_null()) {
      info.tools = true;
      info.tools_list_changed = tools->is_object() && true_at(*tools, "listChanged");
    }
  info.instructions = string_at(result, "instructions");
  return info;
}

expected<mcp_tools_page> read_tools_page(const nlohmann::json& result) {
  if (!result.is_object())
    return failure{"the server's tools/list result is not an object"};
  auto tools = result.find("tools");
  if (tools == result.end() || !tools->is_array())
    return failure{"the server's tools/list result has no \"tools\" array"};
  mcp_tools_page page;
  // Two names the model would call alike ("a.b", "a_b") cannot both be offered: the first stays.
  std::set<std::string> called;
  for (auto& entry : *tools) {
    if (!entry.is_object())
      continue;
    mcp_tool tool;
    tool.name = string_at(entry, "name");
    if (tool.name.empty() || !called.insert(mcp_tool_name("", tool.name)).second)
      continue;
    tool.description = string_at(entry, "description");
    auto schema = entry.find("inputSchema");
    tool.input_schema = schema != entry.end() && schema->is_object() ? *schema
                                                                      : json{{"type", "object"}};
    if (auto notes = entry.find("annotations"); notes != entry.end() && notes->is_object())
      tool.read_only_hint = true_at(*notes, "readOnlyHint");
    page.tools.push_back(std::move(tool));
  }
  page.next_cursor = string_at(result, "nextCursor");
  return page;
}

namespace {

bool valid_id(const json& id) { return id.is_string() || id.is_number(); }

mcp_incoming invalid(std::string why) {
  mcp_incoming in;
  in.error_message = std::move(why);
  return in;
}

mcp_incoming classify(const json& message) {
  if (!message.is_object())
    return invalid("a JSON-RPC message must be an object");
  if (auto version = message.find("jsonrpc"); version == message.end() || *version != "2.0")
    return invalid("not a JSON-RPC 2.0 message (\"jsonrpc\" must be \"2.0\")");
  mcp_incoming in;
  auto id = message.find("id");
  bool has_id = id != message.end() && !id->is_null();
  if (has_id && !valid_id(*id))
    return invalid("a JSON-RPC id must be a number or a string");
  if (has_id)
    in.id = *id;
  if (auto params = message.find("params"); params != message.end())
    in.params = *params;
  if (auto method = message.find("method"); method != message.end()) {
    if (!method->is_string())
      return invalid("a JSON-RPC method must be a string");
    in.method = method->get<std::string>();
    in.what = has_id ? mcp_incoming::kind::request : mcp_incoming::kind::notification;
    return in;
  }
  auto result = message.find("result");
  auto error = message.find("error");
  if (result != message.end() && error != message.end())
    return invalid("a JSON-RPC response holds a result or an error, not both");
  if (result != message.end()) {
    if (!has_id)
      return invalid("a JSON-RPC result without an id");
    in.what = mcp_incoming::kind::response;
    in.result = *result;
    return in;
  }
  if (error != message.end()) {
    if (!error->is_object())
      return invalid("a JSON-RPC error must be an object");
    // A malformed error still answers its request: whoever waits for it hears of it.
    in.what = mcp_incoming::kind::error;
    auto code = error->find("code");
    if (code != error->end() && code->is_number_integer() &&
        !(code->is_number_unsigned() &&
          code->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())))
      in.error_code = code->get<int64_t>();
    in.error_message = string_at(*error, "message");
    if (in.error_message.empty())
      in.error_message = "the server's error says nothing";
    return in;
  }
  return invalid("a JSON-RPC message with neither a method, a result nor an error");
}

} // namespace

std::vector<mcp_incoming> read_mcp_message(std::string_view text) {
  auto parsed = parse_json_bounded(text);
  if (!parsed)
    return {invalid("the server sent " + parsed.error())};
  if (!parsed->is_array())
    return {classify(*parsed)};
  if (parsed->empty())
    return {invalid("the server sent an empty batch")};
  std::vector<mcp_incoming> all;
  all.reserve(parsed->size());
  for (auto& message : *parsed)
    all.push_back(classify(message));
  return all;
}

namespace {

using blob_saver = std::function<std::string(const std::string& mime, const std::string& base64)>;

size_t decoded_size(const std::string& base64) {
  size_t padding = 0;
  for (auto i = base64.rbegin(); i != base64.rend() && *i == '=' && padding < 2; ++i)
    ++padding;
  size_t whole = base64.size() / 4 * 3 + (base64.size() % 4) * 3 / 4;
  return whole > padding ? whole - padding : 0;
}

// "[KIND MIME, N bytes: saved to PATH]": the data goes to a file, never into the model's context.
std::string saved_blob(const std::string& kind, const json& block, const char* data_key,
                       const blob_saver& save_blob) {
  auto data = block.find(data_key);
  if (data == block.end() || !data->is_string())
    return "[" + kind + " without data]";
  auto mime = string_at(block, "mimeType");
  if (!mime_type(mime))
    mime = "application/octet-stream";
  auto& base64 = data->get_ref<const std::string&>();
  auto path = save_blob ? save_blob(mime, base64) : std::string{};
  return "[" + kind + " " + mime + ", " + std::to_string(decoded_size(base64)) + " bytes: " +
         (path.empty() ? std::string{"not saved"} : "saved to " + one_line(path, 4096)) + "]";
}

std::string rendered_block(const json& block, const blob_saver& save_blob) {
  if (!block.is_object())
    return "[a content block that is not an object]";
  auto type = string_at(block, "type");
  if (type == "text") {
    auto text = block.find("text");
    return text != block.end() && text->is_string() ? text->get<std::string>()
                                                    : "[a text block without text]";
  }
  if (type == "image" || type == "audio")
    return saved_blob(type, block, "data", save_blob);
  if (type == "resource_link") {
    auto uri = one_line(string_at(block, "uri"), 2048);
    auto name = one_line(string_at(block, "name"));
    auto mime = one_line(string_at(block, "mimeType"));
    auto line = "[resource " + (name.empty() ? uri : name + ": " + uri) +
                (mime.empty() ? "" : " (" + mime + ")") + "]";
    auto description = string_at(block, "description");
    return description.empty() ? line : line + "\n" + description;
  }
  if (type == "resource") {
    auto resource = block.find("resource");
    if (resource == block.end() || !resource->is_object())
      return "[an embedded resource without its resource]";
    auto kind = "resource " + one_line(string_at(*resource, "uri"), 2048);
    if (auto text = resource->find("text"); text != resource->end() && text->is_string())
      return "[" + kind + "]\n" + text->get<std::string>();
    return saved_blob(kind, *resource, "blob", save_blob);
  }
  return "[" + (type.empty() ? std::string{"a content block"} : one_line(type) + " content") +
         " that troupe does not show]";
}

// Whether any block is text: then the text is what the model reads. The specification asks a
// server that returns structuredContent to give it as text too, and servers that wrap their
// text as {"content": text} (the filesystem server) would otherwise say everything twice.
bool holds_text(const json& content) {
  if (!content.is_array())
    return false;
  for (auto& block : content)
    if (block.is_object() && string_at(block, "type") == "text")
      return true;
  return false;
}

// The server answered (unlike tool_spec's error_result, a call that never ran): exit code 1.
tool_result answered_error(std::string output) {
  tool_result result;
  result.output = std::move(output);
  result.is_error = true;
  result.exit_code = 1;
  return result;
}

} // namespace

tool_result render_mcp_call_result(const nlohmann::json& result, const blob_saver& save_blob) {
  if (!result.is_object())
    return answered_error("the MCP server's result is not an object");
  auto content = result.find("content");
  bool has_content = content != result.end() && content->is_array();
  auto structured = result.find("structuredContent");
  bool has_structured = structured != result.end() && !structured->is_null();
  if (!has_content && !has_structured)
    return answered_error("the MCP server's result has no content");
  std::vector<std::string> pieces;
  if (has_content)
    for (auto& block : *content)
      pieces.push_back(rendered_block(block, save_blob));
  if (has_structured && !(has_content && holds_text(*content)))
    pieces.push_back(dump_safely(*structured));
  tool_result rendered;
  for (size_t i = 0; i < pieces.size(); ++i)
    rendered.output += (i == 0 ? "" : "\n") + pieces[i];
  if (pieces.empty())
    rendered.output = "[no content]";
  if (true_at(result, "isError")) {
    rendered.is_error = true;
    rendered.exit_code = 1;
  }
  return rendered;
}

namespace {

std::string number_text(const json& number) {
  if (number.is_number_float()) {
    double value = number.get<double>();
    if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 1e15)
      return std::to_string(static_cast<int64_t>(value));
  }
  return dump_safely(number);
}

} // namespace

std::string describe_mcp_progress(const nlohmann::json& params) {
  if (!params.is_object())
    return {};
  std::string numbers;
  if (auto progress = params.find("progress"); progress != params.end() && progress->is_number()) {
    numbers = number_text(*progress);
    if (auto total = params.find("total"); total != params.end() && total->is_number())
      numbers += "/" + number_text(*total);
  }
  auto message = one_line(string_at(params, "message"), 500);
  if (numbers.empty() || message.empty())
    return numbers + message;
  return numbers + ": " + message;
}

tool_spec mcp_tool_spec(const std::string& server, const mcp_tool& tool) {
  tool_spec spec;
  spec.name = mcp_tool_name(server, tool.name);
  spec.description = tool.description.empty()
                       ? "Tool " + tool.name + " of the MCP server " + server + "."
                       : tool.description;
  spec.input_schema = tool.input_schema.is_object() ? tool.input_schema
                                                    : nlohmann::json{{"type", "object"}};
  spec.kind = tool_kind::mcp;
  return spec;
}

} // namespace troupe
