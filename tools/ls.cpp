#include "tools/ls.hpp"

#include <algorithm>
#include <vector>

namespace troupe {

namespace {

constexpr size_t max_entries = 1000;

tool_result run_ls(const nlohmann::json& input, const tool_context& ctx) {
  namespace fs = std::filesystem;
  auto dir = resolve_path(ctx, input.value("path", std::string{"."}));
  std::error_code ec;
  if (!fs::exists(dir, ec))
    return error_result("cannot list " + dir.string() + ": no such directory");
  if (!fs::is_directory(dir, ec))
    return error_result(dir.string() + " is not a directory; use read for a file");
  denied_paths denied;
  if (denied.check(ctx, dir))
    return error_result("cannot list " + dir.string() + ": denied by the rule " +
                        denied.rules.front());
  std::vector<std::string> lines;
  fs::directory_iterator it{dir, ec};
  if (ec)
    return error_result("cannot list " + dir.string() + ": " + ec.message());
  for (fs::directory_iterator end; it != end; it.increment(ec)) {
    if (ec)
      break;
    auto name = it->path().filename().string();
    if (denied.check(ctx, it->path()))
      continue;
    if (it->is_symlink(ec))
      lines.push_back(name + "@ -> " + fs::read_symlink(it->path(), ec).string());
    else if (it->is_directory(ec))
      lines.push_back(name + "/");
    else
      lines.push_back(name + "\t" + std::to_string(it->is_regular_file(ec) ? it->file_size(ec) : 0) +
                      " bytes");
  }
  std::sort(lines.begin(), lines.end());
  tool_result result;
  result.output = dir.string() + ": " + std::to_string(lines.size()) +
                  (lines.size() == 1 ? " entry\n" : " entries\n");
  for (size_t i = 0; i < lines.size() && i < max_entries; ++i)
    result.output += lines[i] + "\n";
  if (lines.size() > max_entries) {
    result.output += "[" + std::to_string(lines.size() - max_entries) + " more not shown]\n";
    result.truncated = true;
  }
  result.output += denied.note();
  return result;
}

} // namespace

tool_spec ls_tool() {
  tool_spec spec;
  spec.name = "ls";
  spec.description = "List a directory: subdirectories end in `/`, files show their size, "
                     "symbolic links their target. Hidden entries are included.";
  spec.input_schema = {
    {"type", "object"},
    {"properties",
     {{"path", {{"type", "string"}, {"description", "directory (default: the workspace)"}}}}}};
  spec.block_names = {"ls"};
  spec.examples = {{"src", ""}};
  spec.read_only = true;
  spec.rule_subject = "path";
  spec.input_from_block = [](std::string_view args, std::string_view) {
    return args.empty() ? nlohmann::json::object() : nlohmann::json{{"path", std::string{args}}};
  };
  spec.run = run_ls;
  return spec;
}

} // namespace troupe
