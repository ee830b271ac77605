#include "tools/tool_parser.hpp"

namespace troupe {

namespace {

size_t count_backticks(std::string_view line) {
  size_t n = 0;
  while (n < line.size() && line[n] == '`')
    ++n;
  return n;
}

} // namespace

std::vector<code_block> find_code_blocks(std::string_view text) {
  std::vector<code_block> blocks;
  std::vector<size_t> open_fences; // backtick counts, innermost last
  code_block current;
  std::vector<std::string_view> body_lines;

  size_t pos = 0;
  while (pos <= text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos)
      end = text.size();
    auto line = text.substr(pos, end - pos);
    pos = end + 1;

    auto ticks = count_backticks(line);
    auto info = ticks >= 3 ? trim(line.substr(ticks)) : std::string_view{};
    bool is_fence = ticks >= 3 && info.find('`') == std::string_view::npos;

    if (open_fences.empty()) {
      if (!is_fence)
        continue;
      open_fences.push_back(ticks);
      auto space = info.find_first_of(" \t");
      current = code_block{};
      current.language = std::string{info.substr(0, space)};
      if (space != std::string_view::npos)
        current.args = std::string{trim(info.substr(space))};
      body_lines.clear();
      continue;
    }
    if (is_fence && info.empty() && ticks >= open_fences.back()) {
      open_fences.pop_back();
      if (open_fences.empty()) {
        for (auto& l : body_lines) {
          current.body.append(l);
          current.body.push_back('\n');
        }
        current.terminated = true;
        blocks.push_back(std::move(current));
        continue;
      }
    } else if (is_fence && !info.empty()) {
      open_fences.push_back(ticks);
    }
    body_lines.push_back(line);
  }
  if (!open_fences.empty()) {
    for (auto& l : body_lines) {
      current.body.append(l);
      current.body.push_back('\n');
    }
    current.terminated = false;
    blocks.push_back(std::move(current));
  }
  return blocks;
}

std::vector<tool_call> parse_markdown_calls(std::string_view text, const tool_registry& registry) {
  std::vector<tool_call> calls;
  for (auto& block : find_code_blocks(text)) {
    if (!block.terminated)
      continue;
    auto* tool = registry.find_block(block.language);
    if (tool == nullptr || !tool->input_from_block)
      continue;
    tool_call call;
    call.name = tool->name;
    call.input = tool->input_from_block(block.args, block.body);
    call.format = call_format::markdown;
    calls.push_back(std::move(call));
  }
  return calls;
}

namespace {

std::string xml_unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '&') {
      for (auto [entity, ch] : {std::pair{"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'},
                                {"&quot;", '"'}, {"&apos;", '\''}}) {
        std::string_view e{entity};
        if (s.substr(i, e.size()) == e) {
          out.push_back(ch);
          i += e.size() - 1;
          goto next;
        }
      }
    }
    out.push_back(s[i]);
  next:;
  }
  return out;
}

// Reads attr="value" pairs from the inside of a start tag.
std::string find_attribute(std::string_view tag, std::string_view name) {
  for (size_t pos = 0; (pos = tag.find(name, pos)) != std::string_view::npos; pos += name.size()) {
    bool starts_word = pos == 0 || tag[pos - 1] == ' ' || tag[pos - 1] == '\t';
    auto rest = tag.substr(pos + name.size());
    if (!starts_word || rest.size() < 2 || rest[0] != '=' || (rest[1] != '"' && rest[1] != '\''))
      continue;
    auto close = rest.find(rest[1], 2);
    if (close == std::string_view::npos)
      return {};
    return xml_unescape(rest.substr(2, close - 2));
  }
  return {};
}

} // namespace

std::vector<tool_call> parse_xml_calls(std::string_view text, const tool_registry& registry) {
  std::vector<tool_call> calls;
  constexpr std::string_view open_tag = "<tool-use>";
  constexpr std::string_view close_tag = "</tool-use>";
  for (size_t pos = 0; (pos = text.find(open_tag, pos)) != std::string_view::npos;) {
    auto lt = text.find('<', pos + open_tag.size());
    auto gt = lt == std::string_view::npos ? lt : text.find('>', lt);
    if (gt == std::string_view::npos)
      break; // unterminated: not runnable
    auto tag = text.substr(lt + 1, gt - lt - 1);
    auto name = std::string{tag.substr(0, tag.find_first_of(" \t"))};
    // The element ends at the first </NAME> followed (after blanks) by </tool-use>: a body may
    // itself hold examples of tool-use elements.
    auto end_tag = "</" + name + ">";
    size_t body_end = std::string_view::npos;
    size_t element_end = std::string_view::npos;
    for (auto at = text.find(end_tag, gt); at != std::string_view::npos;
         at = text.find(end_tag, at + 1)) {
      auto after = text.find_first_not_of(" \t\r\n", at + end_tag.size());
      if (after != std::string_view::npos && text.substr(after, close_tag.size()) == close_tag) {
        body_end = at;
        element_end = after + close_tag.size();
        break;
      }
    }
    if (name.empty() || body_end == std::string_view::npos)
      break; // unterminated: not runnable
    pos = element_end;
    auto inner = text.substr(0, body_end); // the body is text[gt + 1, body_end)
    const auto* tool = registry.find_block(name);
    if (tool == nullptr || !tool->input_from_block)
      continue;
    auto body = inner.substr(gt + 1);
    if (!body.empty() && body.front() == '\n')
      body.remove_prefix(1);
    auto args = find_attribute(tag, "args");
    if (args.empty())
      args = find_attribute(tag, "path");
    tool_call call;
    call.name = tool->name;
    call.input = tool->input_from_block(args, body);
    call.format = call_format::xml;
    calls.push_back(std::move(call));
  }
  return calls;
}

std::vector<tool_call> parse_text_calls(std::string_view text, tool_format format,
                                        const tool_registry& registry) {
  switch (format) {
    case tool_format::markdown:
      return parse_markdown_calls(text, registry);
    case tool_format::xml:
      return parse_xml_calls(text, registry);
    case tool_format::tool:
      break;
  }
  return {};
}

std::string render_xml_call(const std::string& name, const std::string& args,
                            const std::string& body) {
  std::string out = "<tool-use>\n<" + name;
  if (!args.empty()) {
    std::string escaped;
    for (char c : args)
      escaped += c == '"' ? std::string{"&quot;"} : c == '&' ? std::string{"&amp;"} : std::string(1, c);
    out += " args=\"" + escaped + "\"";
  }
  out += ">\n" + body;
  if (!body.empty() && body.back() != '\n')
    out += "\n";
  return out + "</" + name + ">\n</tool-use>\n";
}

std::string render_markdown_call(const std::string& language, const std::string& args,
                                 const std::string& body) {
  // A body that itself holds fences needs a longer outer fence to stay one block.
  size_t longest = 0;
  for (size_t i = 0; i < body.size();) {
    auto n = count_backticks(std::string_view{body}.substr(i));
    longest = std::max(longest, n);
    i += n > 0 ? n : 1;
  }
  std::string fence(std::max<size_t>(3, longest + 1), '`');
  std::string out = fence + language;
  if (!args.empty())
    out += " " + args;
  out += "\n" + body;
  if (!body.empty() && body.back() != '\n')
    out += "\n";
  return out + fence + "\n";
}

} // namespace troupe
