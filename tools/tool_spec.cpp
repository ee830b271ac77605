#include "tools/tool_spec.hpp"

#include "protocol/private_files.hpp"

#include <algorithm>

#include <cctype>
#include <fstream>
#include <sstream>
#include <system_error>

#include "protocol/bounded_json.hpp"
#include "tools/sandbox.hpp"

namespace troupe {

namespace {

bool has_json_type(const nlohmann::json& value, const std::string& type) {
  if (type == "string")
    return value.is_string();
  if (type == "integer")
    return value.is_number_integer();
  if (type == "number")
    return value.is_number();
  if (type == "boolean")
    return value.is_boolean();
  if (type == "object")
    return value.is_object();
  if (type == "array")
    return value.is_array();
  return true;
}

// A value as the model sees it in an error: its JSON text, cut after 200 bytes.
std::string shown(const nlohmann::json& value) {
  auto text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() <= 200)
    return text;
  auto cut = text.size() - 200;
  text.resize(200);
  return text + "… (" + std::to_string(cut) + " more bytes)";
}

} // namespace

tool_descriptor describe(const tool_spec& spec) {
  return {spec.name, spec.description, spec.input_schema};
}

std::optional<std::string> validate_input(const tool_spec& spec, const nlohmann::json& input) {
  if (!input.is_object()) {
    // Arguments that did not parse are kept as their text (providers/wire.cpp): say why.
    std::string why;
    if (input.is_string())
      if (auto parsed = parse_json_bounded(input.get_ref<const std::string&>()); !parsed)
        why = " (" + parsed.error() + ")";
    return "input of tool '" + spec.name + "' must be a JSON object" + why + ", got " +
           shown(input);
  }
  // An MCP server's schema is its own: whatever shape it has, it is read, never trusted to be
  // well-formed (a "required" that is no list of names, "properties" that is no object).
  if (!spec.input_schema.is_object())
    return std::nullopt;
  if (auto required = spec.input_schema.find("required");
      required != spec.input_schema.end() && required->is_array())
    for (auto& key : *required)
      if (key.is_string() && !input.contains(key.get_ref<const std::string&>()))
        return "tool '" + spec.name + "' needs the argument '" +
               key.get_ref<const std::string&>() + "'";
  auto properties = spec.input_schema.find("properties");
  if (properties == spec.input_schema.end() || !properties->is_object())
    return std::nullopt;
  // troupe's own tools take no argument they do not name; an MCP tool's schema decides, and
  // JSON Schema allows others unless additionalProperties is false.
  auto additional = spec.input_schema.find("additionalProperties");
  bool closed = spec.kind != tool_kind::mcp ||
                (additional != spec.input_schema.end() && *additional == false);
  for (auto& [key, value] : input.items()) {
    auto property = properties->find(key);
    if (property == properties->end()) {
      if (closed)
        return "tool '" + spec.name + "' has no argument '" + key + "'";
      continue;
    }
    if (auto type = property->find("type"); type != property->end() && type->is_string())
      if (!has_json_type(value, type->get<std::string>()))
        return "argument '" + key + "' of tool '" + spec.name + "' must be of type " +
               type->get<std::string>() + ", got " + shown(value);
    // Integers compare exactly; a fraction on either side (a timeout of 1e308 s) as doubles.
    auto beyond = [&](const nlohmann::json& limit, bool below) {
      if (value.is_number_integer() && limit.is_number_integer())
        return below ? value.get<int64_t>() < limit.get<int64_t>()
                     : value.get<int64_t>() > limit.get<int64_t>();
      return below ? value.get<double>() < limit.get<double>()
                   : value.get<double>() > limit.get<double>();
    };
    if (value.is_number())
      for (auto [bound, below] : {std::pair{"minimum", true}, std::pair{"maximum", false}})
        if (auto limit = property->find(bound);
            limit != property->end() && limit->is_number() && beyond(*limit, below))
          return "argument '" + key + "' of tool '" + spec.name + "' must be " +
                 (below ? "at least " : "at most ") + limit->dump() + ", got " + shown(value);
    if (auto shortest = property->find("minLength");
        value.is_string() && shortest != property->end() && shortest->is_number_integer() &&
        static_cast<int64_t>(value.get_ref<const std::string&>().size()) <
          shortest->get<int64_t>())
      return "argument '" + key + "' of tool '" + spec.name + "' must not be empty";
    if (auto allowed = property->find("enum"); allowed != property->end() && allowed->is_array())
      if (std::find(allowed->begin(), allowed->end(), value) == allowed->end()) {
        std::string choices;
        for (auto& choice : *allowed)
          choices += (choices.empty() ? "" : ", ") + choice.dump();
        return "argument '" + key + "' of tool '" + spec.name + "' must be one of " + choices +
               ", got " + shown(value);
      }
  }
  return std::nullopt;
}

tool_result error_result(std::string message) {
  tool_result result;
  result.output = std::move(message);
  result.is_error = true;
  result.exit_code = -1;
  return result;
}

bool denied_paths::check(const tool_context& ctx, const std::filesystem::path& path) {
  if (!ctx.read_denied)
    return false;
  auto rule = ctx.read_denied(path);
  if (!rule)
    return false;
  ++count;
  if (std::find(rules.begin(), rules.end(), *rule) == rules.end())
    rules.push_back(*rule);
  return true;
}

std::string denied_paths::note() const {
  if (count == 0)
    return {};
  std::string names;
  for (auto& rule : rules)
    names += (names.empty() ? "" : ", ") + rule;
  return "[skipped " + std::to_string(count) + (count == 1 ? " path" : " paths") +
         " that a deny rule forbids reading: " + names + "]\n";
}

std::filesystem::path resolve_path(const tool_context& ctx, const std::string& path) {
  std::filesystem::path p{path};
  if (!ctx.home.empty() && (path == "~" || path.rfind("~/", 0) == 0))
    p = ctx.home / path.substr(path.size() > 1 ? 2 : 1);
  auto resolved = p.is_absolute() ? p.lexically_normal() : (ctx.cwd / p).lexically_normal();
  // In a sandbox, /tmp is the session's own: the file tools see what its shell sees.
  return ctx.sandbox ? ctx.sandbox->host_path(resolved) : resolved;
}

std::string sandbox_refusal(const tool_context& ctx, const std::filesystem::path& real) {
  return ctx.sandbox ? ctx.sandbox->write_refusal(real) : std::string{};
}

size_t char_boundary(const std::string& text, size_t pos) {
  while (pos > 0 && pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80)
    --pos;
  return pos;
}

namespace {

} // namespace

std::string write_whole_file(const std::filesystem::path& path, const std::string& content) {
  std::error_code ec;
  if (path.has_parent_path())
    std::filesystem::create_directories(path.parent_path(), ec);
  if (ec)
    return "cannot create directory " + path.parent_path().string() + ": " + ec.message();
  if (std::filesystem::is_directory(path, ec))
    return path.string() + " is a directory";
  std::ofstream out{path, std::ios::binary | std::ios::trunc};
  if (!out)
    return "cannot open " + path.string() + " for writing";
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.close();
  if (!out)
    return "writing " + path.string() + " failed";
  return {};
}

bool starts_binary(std::istream& in) {
  char head[8192];
  in.read(head, sizeof head);
  bool binary = std::string_view{head, static_cast<size_t>(in.gcount())}.find('\0') !=
                std::string_view::npos;
  in.clear();
  in.seekg(0);
  return binary;
}

void apply_output_budget(tool_result& result, const tool_context& ctx, const std::string& call_id) {
  if (result.output.size() <= ctx.output_cap)
    return;
  std::string saved_to;
  if (!ctx.results_dir.empty()) {
    std::string name;
    for (char c : call_id)
      name += std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' ? c : '_';
    // A file of its own: two calls can share an id (a server that reuses ids, with a compaction
    // between them), and a name past the file system's limit would save nothing.
    if (name.size() > 200)
      name.resize(200);
    if (name.empty())
      name = "call";
    auto path = ctx.results_dir / (name + ".txt");
    std::error_code ec;
    for (int n = 2; std::filesystem::exists(path, ec); ++n)
      path = ctx.results_dir / (name + "_" + std::to_string(n) + ".txt");
    // Whole outputs hold what the model was not shown (secrets included): owner only.
    if (write_private_file(path, result.output).empty())
      saved_to = path.string();
  }
  result.truncated = cap_output(result.output, ctx.output_cap, saved_to) || result.truncated;
}

bool cap_output(std::string& text, size_t cap, const std::string& saved_to) {
  if (text.size() <= cap)
    return false;
  auto head_end = char_boundary(text, cap / 2);
  auto tail_start = char_boundary(text, text.size() - cap / 2);
  auto cut = tail_start - head_end;
  auto note = "\n[... " + std::to_string(cut) + " bytes cut from the middle of " +
              std::to_string(text.size()) +
              (saved_to.empty() ? std::string{} : "; the whole output is in " + saved_to) +
              " ...]\n";
  text = text.substr(0, head_end) + note + text.substr(tail_start);
  return true;
}

std::string_view trim(std::string_view s) {
  auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos)
    return {};
  auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

} // namespace troupe
