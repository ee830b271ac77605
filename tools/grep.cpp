#include "tools/grep.hpp"

#include <fstream>
#include <regex>
#include <vector>

#include "tools/path_match.hpp"
#include "tools/search_walk.hpp"

namespace troupe {

namespace {

constexpr size_t max_matches = 500;
// std::regex recurses per character; a minified file's one long line would exhaust the stack.
constexpr size_t longest_line_searched = 4000;

struct search {
  std::regex regex;
  std::string mode;
  size_t context = 0;
  size_t matches = 0;
  size_t files_matched = 0;
  bool stopped = false;
  std::string output;

  void file(const std::filesystem::path& path, const std::string& shown) {
    if (stopped)
      return;
    std::ifstream in{path, std::ios::binary};
    if (starts_binary(in))
      return;
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) {
      if (!line.empty() && line.back() == '\r')
        line.pop_back();
      lines.push_back(std::move(line));
    }
    std::vector<size_t> hits;
    for (size_t i = 0; i < lines.size(); ++i) {
      std::string_view searched{lines[i].data(), std::min(lines[i].size(), longest_line_searched)};
      if (std::regex_search(searched.begin(), searched.end(), regex))
        hits.push_back(i);
    }
    if (hits.empty())
      return;
    ++files_matched;
    if (mode == "files_with_matches") {
      output += shown + "\n";
    } else if (mode == "count") {
      output += shown + ":" + std::to_string(hits.size()) + "\n";
    } else {
      size_t printed_to = 0; // lines before this index are already printed
      for (auto hit : hits) {
        if (matches == max_matches) {
          stopped = true;
          return;
        }
        ++matches;
        size_t from = hit >= context ? hit - context : 0;
        from = std::max(from, printed_to);
        if (printed_to != 0 && from > printed_to)
          output += "--\n";
        for (size_t i = from; i <= std::min(hit + context, lines.size() - 1); ++i)
          output += shown + (i == hit ? ":" : "-") + std::to_string(i + 1) +
                    (i == hit ? ":" : "-") + lines[i] + "\n";
        printed_to = std::min(hit + context, lines.size() - 1) + 1;
      }
    }
  }
};

tool_result run_grep(const nlohmann::json& input, const tool_context& ctx) {
  search s;
  auto pattern = input.at("pattern").get<std::string>();
  auto flags = std::regex::ECMAScript | std::regex::optimize;
  if (input.value("ignore_case", false))
    flags |= std::regex::icase;
  try {
    s.regex = std::regex{pattern, flags};
  } catch (const std::regex_error& e) {
    return error_result("invalid regular expression '" + pattern + "': " + e.what());
  }
  s.mode = input.value("output_mode", std::string{"content"});
  if (s.mode != "content" && s.mode != "files_with_matches" && s.mode != "count")
    return error_result("output_mode must be content, files_with_matches or count");
  auto context = input.value("context", int64_t{0});
  if (context < 0 || context > 20)
    return error_result("context must be from 0 to 20 lines");
  s.context = static_cast<size_t>(context);
  auto root = resolve_path(ctx, input.value("path", std::string{"."}));
  auto file_filter = input.value("glob", std::string{});
  if (!file_filter.empty() && file_filter.find('/') == std::string::npos)
    file_filter = "**/" + file_filter;
  if (!file_filter.empty())
    if (auto problem = glob_pattern_error(file_filter))
      return error_result("glob: " + *problem);
  std::error_code ec;
  denied_paths denied;
  bool finished = true;
  if (denied.check(ctx, root)) {
    return error_result("cannot search " + root.string() + ": denied by the rule " +
                        denied.rules.front());
  } else if (std::filesystem::is_regular_file(root, ec)) {
    s.file(root, root.filename().string());
  } else if (std::filesystem::is_directory(root, ec)) {
    finished = walk_search_tree(ctx, root, denied, [&](const auto& file, const auto& relative) {
      if ((file_filter.empty() || glob_match(file_filter, relative)) && !denied.check(ctx, file))
        s.file(file, relative);
      return !s.stopped;
    });
  } else {
    return error_result("cannot search " + root.string() + ": no such file or directory");
  }
  if (!finished)
    return error_result("[interrupted before the search finished]");
  tool_result result;
  result.output = s.files_matched == 0 ? "No matches for /" + pattern + "/\n" : s.output;
  result.output += denied.note();
  if (s.stopped) {
    result.output += "[stopped at " + std::to_string(max_matches) +
                     " matches; narrow the pattern, the path or the glob]\n";
    result.truncated = true;
  }
  return result;
}

} // namespace

tool_spec grep_tool() {
  tool_spec spec;
  spec.name = "grep";
  spec.description =
    "Search files for a regular expression (ECMAScript syntax). Searches the workspace, or "
    "`path` (a directory or one file); `glob` filters file names (e.g. *.cpp). output_mode: "
    "content (matching lines as path:line:text, the default), files_with_matches, or count. "
    "Binary files and files ignored by .gitignore are skipped.";
  spec.input_schema = {
    {"type", "object"},
    {"properties",
     {{"pattern", {{"type", "string"}, {"description", "regular expression"}}},
      {"path", {{"type", "string"}, {"description", "directory or file (default: workspace)"}}},
      {"glob", {{"type", "string"}, {"description", "only files matching this glob"}}},
      {"ignore_case", {{"type", "boolean"}, {"description", "case-insensitive"}}},
      {"output_mode",
       {{"type", "string"},
        {"enum", {"content", "files_with_matches", "count"}},
        {"description", "what to show (default content)"}}},
      {"context", {{"type", "integer"}, {"description", "lines of context around each match"}}}}},
    {"required", {"pattern"}}};
  spec.block_names = {"grep"};
  spec.examples = {{"TODO", ""}};
  spec.read_only = true;
  spec.kind = tool_kind::scan;
  spec.rule_subject = "path";
  spec.input_from_block = [](std::string_view args, std::string_view) {
    return nlohmann::json{{"pattern", std::string{args}}};
  };
  spec.run = run_grep;
  return spec;
}

} // namespace troupe
