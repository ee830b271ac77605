#include "orchestrator/agent_definitions.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <vector>

#include "orchestrator/model_flags.hpp"
#include "orchestrator/project_files.hpp"
#include "tools/claude_code_names.hpp"

namespace troupe {

namespace {

/// A definition file may take this much (a prompt, not a document).
constexpr size_t definition_cap = 256 * 1024;

struct line_of {
  std::string text;
  int number = 0;
};

std::string trim(const std::string& text) {
  auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos)
    return {};
  auto last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

size_t indent_of(const std::string& line) {
  return line.find_first_not_of(' ') == std::string::npos ? line.size()
                                                          : line.find_first_not_of(' ');
}

// One value of the front matter: a text or a list, with the line it started on.
struct value {
  std::optional<std::string> text;
  std::vector<std::string> list;
  bool is_list = false;
  int line = 0;
};

class front_matter_parser {
public:
  front_matter_parser(std::vector<line_of> lines, std::string file)
    : lines_(std::move(lines)), file_(std::move(file)) {}

  expected<std::map<std::string, value>> parse() {
    std::map<std::string, value> values;
    size_t i = 0;
    while (i < lines_.size()) {
      const auto& line = lines_[i];
      auto trimmed = trim(line.text);
      if (trimmed.empty() || trimmed[0] == '#') {
        ++i;
        continue;
      }
      if (indent_of(line.text) > 0 || line.text[0] == '\t')
        return error(line.number, "an indented line belongs to no key");
      auto colon = line.text.find(':');
      auto key = colon == std::string::npos ? std::string{} : trim(line.text.substr(0, colon));
      if (key.empty() || key.find_first_of(" \t\"'") != std::string::npos)
        return error(line.number, "expected `key: value`, got `" + trimmed + "`");
      if (values.count(key))
        return error(line.number, "`" + key + "` is given twice");
      auto rest = trim(line.text.substr(colon + 1));
      ++i;
      auto parsed = value_of(rest, line.number, i);
      if (!parsed)
        return failure{parsed.error()};
      values[key] = std::move(*parsed);
    }
    return values;
  }

private:
  failure error(int line, const std::string& what) const {
    return failure{file_ + ":" + std::to_string(line) + ": " + what};
  }

  // The value after `key:`; `next` moves past the lines a block takes.
  expected<value> value_of(const std::string& rest, int number, size_t& next) {
    value v;
    v.line = number;
    if (rest.empty()) {
      // A block list (`- a` lines, indented or not), or nothing.
      while (next < lines_.size()) {
        auto item = trim(lines_[next].text);
        if (item.empty()) {
          ++next;
          continue;
        }
        if (item[0] != '-')
          break;
        auto text = unquoted(trim(item.substr(1)), lines_[next].number);
        if (!text)
          return failure{text.error()};
        v.list.push_back(*text);
        v.is_list = true;
        ++next;
      }
      if (!v.is_list)
        v.text = std::string{};
      return v;
    }
    if (rest[0] == '|' || rest[0] == '>') {
      if (rest.find_first_not_of("|>+-", 0) != std::string::npos &&
          trim(rest.substr(rest.find_first_not_of("|>+-"))).rfind('#', 0) != 0)
        return error(number, "a block value (| or >) starts on the next line");
      bool folded = rest[0] == '>';
      std::vector<std::string> block;
      size_t indent = std::string::npos;
      while (next < lines_.size()) {
        const auto& text = lines_[next].text;
        if (trim(text).empty()) {
          block.emplace_back();
          ++next;
          continue;
        }
        if (indent_of(text) == 0)
          break;
        indent = std::min(indent, indent_of(text));
        block.push_back(text);
        ++next;
      }
      while (!block.empty() && block.back().empty())
        block.pop_back();
      // `|` keeps the lines; `>` folds them into one, a blank line standing for a newline.
      std::string joined;
      for (size_t k = 0; k < block.size(); ++k) {
        auto piece = block[k].size() >= indent ? block[k].substr(indent) : std::string{};
        if (!folded)
          joined += (k > 0 ? "\n" : "") + piece;
        else if (piece.empty())
          joined += "\n";
        else
          joined += (k > 0 && !block[k - 1].empty() ? " " : "") + piece;
      }
      v.text = trim(joined);
      return v;
    }
    if (rest[0] == '[') {
      auto close = rest.rfind(']');
      if (close == std::string::npos)
        return error(number, "a list `[…]` is not closed on its line");
      auto after = trim(rest.substr(close + 1));
      if (!after.empty() && after[0] != '#')
        return error(number, "text after the list's `]`");
      auto inner = rest.substr(1, close - 1);
      v.is_list = true;
      size_t start = 0;
      while (start <= inner.size()) {
        auto comma = inner.find(',', start);
        auto item = trim(inner.substr(start, comma == std::string::npos ? std::string::npos
                                                                         : comma - start));
        if (!item.empty()) {
          auto text = unquoted(item, number);
          if (!text)
            return failure{text.error()};
          v.list.push_back(*text);
        }
        if (comma == std::string::npos)
          break;
        start = comma + 1;
      }
      return v;
    }
    auto text = unquoted(rest, number);
    if (!text)
      return failure{text.error()};
    v.text = *text;
    return v;
  }

  // A scalar: '…' ('' is a quote), "…" (with \" \\ \n \t), or plain up to a ` #` comment.
  expected<std::string> unquoted(const std::string& raw, int number) const {
    if (raw.empty())
      return raw;
    if (raw[0] == '\'') {
      std::string out;
      for (size_t k = 1; k < raw.size(); ++k) {
        if (raw[k] != '\'') {
          out += raw[k];
        } else if (k + 1 < raw.size() && raw[k + 1] == '\'') {
          out += '\'';
          ++k;
        } else {
          auto after = trim(raw.substr(k + 1));
          if (!after.empty() && after[0] != '#')
            return error(number, "text after a quoted value");
          return out;
        }
      }
      return error(number, "a quote (') is not closed on its line");
    }
    if (raw[0] == '"') {
      std::string out;
      for (size_t k = 1; k < raw.size(); ++k) {
        if (raw[k] == '\\' && k + 1 < raw.size()) {
          auto c = raw[++k];
          out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
        } else if (raw[k] == '"') {
          auto after = trim(raw.substr(k + 1));
          if (!after.empty() && after[0] != '#')
            return error(number, "text after a quoted value");
          return out;
        } else {
          out += raw[k];
        }
      }
      return error(number, "a quote (\") is not closed on its line");
    }
    auto comment = raw.find(" #");
    return trim(comment == std::string::npos ? raw : raw.substr(0, comment));
  }

  std::vector<line_of> lines_;
  std::string file_;
};

// The tool names a value gives (`a, b` or a list), each in troupe's spelling.
expected<std::vector<std::string>> tool_names(const value& v, const std::string& key,
                                              const std::string& file) {
  std::vector<std::string> given = v.list;
  if (!v.is_list && v.text) {
    size_t start = 0;
    while (start <= v.text->size()) {
      auto comma = v.text->find(',', start);
      given.push_back(trim(v.text->substr(start, comma == std::string::npos ? std::string::npos
                                                                             : comma - start)));
      if (comma == std::string::npos)
        break;
      start = comma + 1;
    }
  }
  std::vector<std::string> names;
  for (auto& name : given) {
    if (name.empty())
      continue;
    auto own = troupe_tool_name(name);
    if (!own)
      return failure{file + ":" + std::to_string(v.line) + ": unknown tool '" + name + "' in " +
                     key + " (troupe's tools: shell, read, write, edit, patch, glob, grep, ls, "
                     "task, task_output, task_stop, task_wait, todo, complete; or Claude Code's "
                     "names for them: Bash, Read, Write, Edit, MultiEdit, Glob, Grep, LS, Task, "
                     "TodoWrite, …)"};
    if (std::find(names.begin(), names.end(), *own) == names.end())
      names.push_back(*own);
  }
  return names;
}

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 64 || !std::isalnum(static_cast<unsigned char>(name[0])))
    return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '_' || c == '.';
  });
}

expected<std::string> model_of(const value& v, const std::string& file) {
  auto model = v.text.value_or("");
  if (model.empty() || model == "inherit")
    return std::string{};
  // Claude Code's aliases and bare names as --model takes them (sonnet, claude-*, gpt-*).
  auto qualified = qualified_model_spec(model);
  if (!qualified)
    return failure{file + ":" + std::to_string(v.line) + ": " + qualified.error() +
                   "; or inherit"};
  return *qualified;
}

} // namespace

expected<agent_type> parse_agent_definition(const std::string& text, const std::string& file) {
  std::vector<line_of> lines;
  size_t start = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0; // a byte order mark
  for (int number = 1; start <= text.size(); ++number) {
    auto end = text.find('\n', start);
    auto line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    lines.push_back({line, number});
    if (end == std::string::npos)
      break;
    start = end + 1;
  }
  if (lines.empty() || trim(lines[0].text) != "---")
    return failure{file + ":1: expected front matter: a first line `---`, then `name:`, "
                          "`description:` and the others, then `---`"};
  size_t close = 1;
  while (close < lines.size() && trim(lines[close].text) != "---")
    ++close;
  if (close == lines.size())
    return failure{file + ":1: the front matter is not closed by a line `---`"};
  front_matter_parser parser{{lines.begin() + 1, lines.begin() + static_cast<long>(close)}, file};
  auto values = parser.parse();
  if (!values)
    return failure{values.error()};
  agent_type type;
  type.file = file;
  auto name = values->find("name");
  if (name == values->end() || !name->second.text || name->second.text->empty())
    return failure{file + ":1: the front matter has no `name`"};
  if (!valid_name(*name->second.text))
    return failure{file + ":" + std::to_string(name->second.line) + ": name '" +
                   *name->second.text + "' must be letters, digits, '-', '_' and '.' (at most 64, "
                   "starting with a letter or digit)"};
  type.name = *name->second.text;
  auto description = values->find("description");
  if (description == values->end() || !description->second.text ||
      description->second.text->empty())
    return failure{file + ":1: the front matter has no `description` (when to use this agent)"};
  type.description = *description->second.text;
  if (auto tools = values->find("tools"); tools != values->end()) {
    auto names = tool_names(tools->second, "tools", file);
    if (!names)
      return failure{names.error()};
    type.tools = std::move(*names);
    if (type.tools.empty())
      return failure{file + ":" + std::to_string(tools->second.line) +
                     ": `tools` names no tool (leave it out for all of the parent's)"};
  }
  if (auto denied = values->find("disallowedTools"); denied != values->end()) {
    auto names = tool_names(denied->second, "disallowedTools", file);
    if (!names)
      return failure{names.error()};
    type.disallowed_tools = std::move(*names);
  }
  if (auto model = values->find("model"); model != values->end()) {
    auto spec = model_of(model->second, file);
    if (!spec)
      return failure{spec.error()};
    type.model = *spec;
  }
  std::string body;
  for (size_t i = close + 1; i < lines.size(); ++i)
    body += lines[i].text + (i + 1 < lines.size() ? "\n" : "");
  auto first = body.find_first_not_of(" \t\r\n");
  type.prompt = first == std::string::npos
                  ? std::string{}
                  : body.substr(first, body.find_last_not_of(" \t\r\n") - first + 1);
  return type;
}

expected<agent_types> read_agent_types(const std::filesystem::path& workspace,
                                       const std::filesystem::path& user_dir,
                                       const std::filesystem::path& home) {
  agent_types types;
  auto root = project_root(workspace, home);
  struct place {
    std::filesystem::path dir;
    bool project;
  };
  for (auto& [dir, project] : {place{user_dir / "agents", false},
                               place{workspace / ".claude/agents", true},
                               place{workspace / ".troupe/agents", true}}) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
      continue;
    std::vector<std::filesystem::path> files;
    for (auto it = std::filesystem::directory_iterator{dir, ec};
         !ec && it != std::filesystem::directory_iterator{}; it.increment(ec))
      if (it->path().extension() == ".md")
        files.push_back(it->path());
    if (ec)
      return failure{dir.string() + ": cannot list it: " + ec.message()};
    std::sort(files.begin(), files.end());
    std::map<std::string, std::string> here; // name → file, in this directory
    for (auto& file : files) {
      if (project)
        if (auto outside = outside_project(file, root); !outside.empty())
          return failure{file.string() + ": not read: " + outside};
      auto read = read_capped_file(file, definition_cap);
      if (!read)
        return failure{file.string() + ": cannot read it: " + read.error()};
      if (read->cut)
        return failure{file.string() + ": larger than " + std::to_string(definition_cap) +
                       " bytes, too large for an agent's definition"};
      auto type = parse_agent_definition(read->text, file.string());
      if (!type)
        return failure{type.error()};
      if (auto twice = here.find(type->name); twice != here.end())
        return failure{file.string() + ": the agent name '" + type->name + "' is " +
                       twice->second + "'s too"};
      here[type->name] = file.string();
      auto same = std::find_if(types.begin(), types.end(),
                               [&](const agent_type& t) { return t.name == type->name; });
      if (same != types.end())
        *same = std::move(*type); // the project's replaces the user's
      else
        types.push_back(std::move(*type));
    }
  }
  return types;
}

} // namespace troupe
