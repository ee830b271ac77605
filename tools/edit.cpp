#include "tools/edit.hpp"

#include <algorithm>
#include <vector>

#include "tools/real_path.hpp"

namespace troupe {

namespace {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  for (size_t pos = 0; pos <= text.size();) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos) {
      if (pos < text.size())
        lines.push_back(text.substr(pos));
      break;
    }
    lines.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return lines;
}

// Similarity of two lines from 0 to 1: the longest common subsequence over the longer length,
// whitespace at the ends ignored (the usual reason a model's old_string does not match).
double similarity(std::string_view a, std::string_view b) {
  a = trim(a);
  b = trim(b);
  if (a.empty() && b.empty())
    return 1.0;
  if (a.size() > 400 || b.size() > 400) // long lines: compare prefixes, it is only a hint
    a = a.substr(0, 400), b = b.substr(0, 400);
  std::vector<size_t> previous(b.size() + 1, 0), current(b.size() + 1, 0);
  for (char x : a) {
    for (size_t j = 0; j < b.size(); ++j)
      current[j + 1] = x == b[j] ? previous[j] + 1 : std::max(previous[j + 1], current[j]);
    std::swap(previous, current);
  }
  return static_cast<double>(previous[b.size()]) / static_cast<double>(std::max(a.size(), b.size()));
}

size_t line_of(std::string_view content, size_t offset) {
  return static_cast<size_t>(std::count(content.begin(), content.begin() + static_cast<long>(offset), '\n')) + 1;
}

// The window of the file most like `wanted`, numbered, for a failed match.
std::string nearest_match(std::string_view content, std::string_view wanted) {
  auto file = split_lines(content);
  auto target = split_lines(wanted);
  if (file.empty() || target.empty())
    return "";
  size_t window = std::min(target.size(), file.size());
  double best = -1;
  size_t best_start = 0;
  for (size_t start = 0; start + window <= file.size(); ++start) {
    double score = 0;
    for (size_t i = 0; i < window; ++i)
      score += similarity(file[start + i], target[i]);
    if (score > best) {
      best = score;
      best_start = start;
    }
  }
  if (best / static_cast<double>(window) < 0.5)
    return "";
  std::string out = "\nThe most similar lines in the file (" +
                    std::to_string(static_cast<int>(100 * best / static_cast<double>(window))) +
                    "% alike):\n";
  for (size_t i = best_start; i < best_start + window; ++i)
    out += std::to_string(i + 1) + "\t" + std::string{file[i]} + "\n";
  return out;
}

tool_result run_edit(const nlohmann::json& input, const tool_context& ctx) {
  auto path = resolve_path(ctx, input.at("path").get<std::string>());
  auto old_text = input.at("old_string").get<std::string>();
  auto new_text = input.at("new_string").get<std::string>();
  std::string content;
  auto file = resolved_file::resolve(path, false);
  std::string problem = file ? file->read(content) : file.error();
  if (!problem.empty())
    return error_result(problem + (file && file->exists() ? "" : "; to create a file, use write"));
  if (auto moved = moved_since_approval(path, file->real_path(), ctx.approved_path);
      !moved.empty())
    return error_result(moved);
  if (auto refused = sandbox_refusal(ctx, file->real_path()); !refused.empty())
    return error_result(refused);
  auto replaced = replace_exact(content, old_text, new_text, input.value("replace_all", false));
  if (!replaced.error.empty())
    return error_result(path.string() + ": " + replaced.error);
  if (auto failed = file->write(content); !failed.empty())
    return error_result(failed);
  tool_result result;
  result.output = "Edited " + shown_path(path, *file) + ": " + std::to_string(replaced.count) +
                  (replaced.count == 1 ? " replacement" : " replacements");
  return result;
}

} // namespace

replacement replace_exact(std::string& content, const std::string& old_text,
                          const std::string& new_text, bool replace_all) {
  replacement result;
  if (old_text.empty()) {
    result.error = "old_string is empty; give the exact text to replace";
    return result;
  }
  if (old_text == new_text) {
    result.error = "old_string and new_string are the same; nothing would change";
    return result;
  }
  std::vector<size_t> found;
  for (auto pos = content.find(old_text); pos != std::string::npos;
       pos = content.find(old_text, pos + old_text.size()))
    found.push_back(pos);
  if (found.empty()) {
    result.error = "old_string was not found (it must match exactly, whitespace included)" +
                   nearest_match(content, old_text);
    return result;
  }
  if (found.size() > 1 && !replace_all) {
    std::string lines;
    for (size_t i = 0; i < found.size() && i < 10; ++i)
      lines += (i == 0 ? "" : ", ") + std::to_string(line_of(content, found[i]));
    result.error = "old_string matches " + std::to_string(found.size()) +
                   " places (lines " + lines + (found.size() > 10 ? ", …" : "") +
                   "); add surrounding lines to make it unique, or set replace_all";
    return result;
  }
  // Back to front, so earlier offsets stay valid.
  for (auto i = found.rbegin(); i != found.rend(); ++i)
    content.replace(*i, old_text.size(), new_text);
  result.count = found.size();
  return result;
}

tool_spec edit_tool() {
  tool_spec spec;
  spec.name = "edit";
  spec.description =
    "Replace old_string with new_string in a file. old_string must match the file exactly "
    "(whitespace and indentation included) and only once, unless replace_all is true; include "
    "enough surrounding lines to make it unique. Read the file first.";
  spec.input_schema = {
    {"type", "object"},
    {"properties",
     {{"path", {{"type", "string"}, {"description", "file to change"}}},
      {"old_string", {{"type", "string"}, {"description", "the exact text to replace"}}},
      {"new_string", {{"type", "string"}, {"description", "the text to put in its place"}}},
      {"replace_all",
       {{"type", "boolean"}, {"description", "replace every occurrence (default false)"}}}}},
    {"required", {"path", "old_string", "new_string"}}};
  spec.writes_files = true;
  spec.rule_subject = "path";
  spec.run = run_edit;
  return spec;
}

} // namespace troupe
