#include "tools/tool_parser.hpp"

namespace troupe {

namespace {

std::string_view trim(std::string_view s) {
  auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos)
    return {};
  auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

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
