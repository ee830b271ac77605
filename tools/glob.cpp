#include "tools/glob.hpp"

#include <algorithm>
#include <vector>

#include "tools/path_match.hpp"
#include "tools/search_walk.hpp"

namespace troupe {

namespace {

constexpr size_t max_files = 1000;

tool_result run_glob(const nlohmann::json& input, const tool_context& ctx) {
  auto pattern = input.at("pattern").get<std::string>();
  if (auto problem = glob_pattern_error(pattern))
    return error_result(*problem);
  auto root = resolve_path(ctx, input.value("path", std::string{"."}));
  std::error_code ec;
  if (!std::filesystem::is_directory(root, ec))
    return error_result(root.string() + " is not a directory");
  denied_paths denied;
  if (denied.check(ctx, root))
    return error_result("cannot search " + root.string() + ": denied by the rule " +
                        denied.rules.front());
  // A pattern without a slash matches at any depth, as `**/pattern`.
  auto effective = pattern.find('/') == std::string::npos ? "**/" + pattern : pattern;
  struct found {
    std::string relative;
    std::filesystem::file_time_type modified;
  };
  std::vector<found> files;
  size_t matched = 0;
  bool finished = walk_search_tree(ctx, root, denied, [&](const auto& file, const auto& relative) {
    if (glob_match(effective, relative) && !denied.check(ctx, file)) {
      ++matched;
      if (files.size() < 10 * max_files)
        files.push_back({relative, std::filesystem::last_write_time(file, ec)});
    }
    return true;
  });
  if (!finished)
    return error_result("[interrupted before the search finished]");
  std::stable_sort(files.begin(), files.end(),
                   [](auto& a, auto& b) { return a.modified > b.modified; });
  tool_result result;
  if (files.empty()) {
    auto note = denied.note();
    result.output = "No files match " + pattern + " under " + root.string() +
                    (note.empty() ? "" : "\n" + note);
    return result;
  }
  for (size_t i = 0; i < files.size() && i < max_files; ++i)
    result.output += files[i].relative + "\n";
  if (matched > max_files) {
    result.output += "[" + std::to_string(matched - max_files) +
                     " more files match; narrow the pattern or the path]\n";
    result.truncated = true;
  }
  result.output += denied.note();
  return result;
}

} // namespace

tool_spec glob_tool() {
  tool_spec spec;
  spec.name = "glob";
  spec.description =
    "List files whose path matches a glob pattern (`*`, `?`, `**` for any directories, "
    "`{a,b}`, `[abc]`), most recently modified first, relative to the directory searched. A "
    "pattern without `/` matches at any depth. Files ignored by .gitignore are skipped.";
  spec.input_schema = {
    {"type", "object"},
    {"properties",
     {{"pattern", {{"type", "string"}, {"description", "e.g. **/*.cpp or src/*.{h,cpp}"}}},
      {"path", {{"type", "string"}, {"description", "directory to search (default: workspace)"}}}}},
    {"required", {"pattern"}}};
  spec.block_names = {"glob"};
  spec.examples = {{"**/*.md", ""}};
  spec.read_only = true;
  spec.kind = tool_kind::scan;
  spec.rule_subject = "path";
  spec.input_from_block = [](std::string_view args, std::string_view) {
    return nlohmann::json{{"pattern", std::string{args}}};
  };
  spec.run = run_glob;
  return spec;
}

} // namespace troupe
