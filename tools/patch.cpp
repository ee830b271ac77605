#include "tools/patch.hpp"

#include <vector>

#include "tools/edit.hpp"
#include "tools/real_path.hpp"

namespace troupe {

namespace {

struct hunk {
  std::string original;
  std::string updated;
};

constexpr std::string_view original_marker = "<<<<<<< ORIGINAL";
constexpr std::string_view divider = "=======";
constexpr std::string_view updated_marker = ">>>>>>> UPDATED";

bool is_marker(std::string_view line, std::string_view marker) {
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r'))
    line.remove_suffix(1);
  return line == marker;
}

// Splits the patch text into hunks, or returns an error message.
std::string parse_hunks(std::string_view text, std::vector<hunk>& hunks) {
  enum { outside, in_original, in_updated } state = outside;
  hunk current;
  size_t line_number = 0;
  for (size_t pos = 0; pos < text.size();) {
    auto end = text.find('\n', pos);
    auto line = text.substr(pos, end == std::string_view::npos ? end : end - pos);
    pos = end == std::string_view::npos ? text.size() : end + 1;
    ++line_number;
    std::string with_newline = std::string{line} + "\n";
    switch (state) {
      case outside:
        if (is_marker(line, original_marker))
          state = in_original;
        else if (!line.empty())
          return "line " + std::to_string(line_number) + " is outside any hunk; each change is " +
                 std::string{original_marker} + " … " + std::string{divider} + " … " +
                 std::string{updated_marker};
        break;
      case in_original:
        if (is_marker(line, divider))
          state = in_updated;
        else
          current.original += with_newline;
        break;
      case in_updated:
        if (is_marker(line, updated_marker)) {
          hunks.push_back(std::move(current));
          current = hunk{};
          state = outside;
        } else {
          current.updated += with_newline;
        }
        break;
    }
  }
  if (state != outside)
    return "the last hunk is not closed with " + std::string{updated_marker};
  if (hunks.empty())
    return "no hunks: a patch holds one or more " + std::string{original_marker} + " … " +
           std::string{updated_marker} + " blocks";
  return {};
}

tool_result run_patch(const nlohmann::json& input, const tool_context& ctx) {
  auto path = resolve_path(ctx, input.at("path").get<std::string>());
  std::vector<hunk> hunks;
  if (auto problem = parse_hunks(input.at("patch").get<std::string>(), hunks); !problem.empty())
    return error_result("invalid patch: " + problem);
  std::string content;
  auto file = resolved_file::resolve(path, false);
  if (!file)
    return error_result(file.error());
  if (auto moved = moved_since_approval(path, file->real_path(), ctx.approved_path);
      !moved.empty())
    return error_result(moved);
  if (auto refused = sandbox_refusal(ctx, file->real_path()); !refused.empty())
    return error_result(refused);
  if (auto problem = file->read(content); !problem.empty())
    return error_result(problem);
  // All hunks or none: the file is written only when every one applies.
  for (size_t i = 0; i < hunks.size(); ++i) {
    auto& h = hunks[i];
    if (h.original.empty()) {
      return error_result("hunk " + std::to_string(i + 1) +
                          " has an empty ORIGINAL; to write a whole file, use write");
    }
    auto replaced = replace_exact(content, h.original, h.updated, false);
    if (!replaced.error.empty())
      return error_result(path.string() + ", hunk " + std::to_string(i + 1) + " of " +
                          std::to_string(hunks.size()) + ": " + replaced.error +
                          "\n(no hunk was applied)");
  }
  if (auto problem = file->write(content); !problem.empty())
    return error_result(problem);
  tool_result result;
  result.output = "Patched " + shown_path(path, *file) + ": " + std::to_string(hunks.size()) +
                  (hunks.size() == 1 ? " hunk" : " hunks");
  return result;
}

} // namespace

tool_spec patch_tool() {
  tool_spec spec;
  spec.name = "patch";
  spec.description =
    "Change parts of a file with one or more hunks. Each hunk is a line `<<<<<<< ORIGINAL`, "
    "the exact lines to replace, a line `=======`, the new lines, and a line "
    "`>>>>>>> UPDATED`. Every ORIGINAL must match the file exactly once; if one does not, "
    "nothing is changed.";
  spec.input_schema = {
    {"type", "object"},
    {"properties",
     {{"path", {{"type", "string"}, {"description", "file to change"}}},
      {"patch", {{"type", "string"}, {"description", "the hunks"}}}}},
    {"required", {"path", "patch"}}};
  spec.block_names = {"patch"};
  spec.examples = {{"hello.py", "<<<<<<< ORIGINAL\nprint(\"Hello\")\n=======\n"
                                "print(\"Hello, world!\")\n>>>>>>> UPDATED\n"}};
  spec.writes_files = true;
  spec.rule_subject = "path";
  spec.input_from_block = [](std::string_view args, std::string_view body) {
    return nlohmann::json{{"path", std::string{args}}, {"patch", std::string{body}}};
  };
  spec.run = run_patch;
  return spec;
}

} // namespace troupe
