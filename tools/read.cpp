#include "tools/read.hpp"

#include <fstream>

namespace troupe {

namespace {

tool_result run_read(const nlohmann::json& input, const tool_context& ctx) {
  auto path = resolve_path(ctx, input.at("path").get<std::string>());
  int64_t first = input.value("start_line", int64_t{1});
  int64_t last = input.value("end_line", int64_t{0});
  if (first < 1 || (last != 0 && last < first))
    return error_result("invalid line range " + std::to_string(first) + ".." +
                        std::to_string(last) + ": lines count from 1 and end_line >= start_line");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return error_result(path.string() + " is a directory, not a file");
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return error_result("cannot read " + path.string() + ": no such file or not readable");
  tool_result result;
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (n < first)
      continue;
    if (last != 0 && n > last)
      break;
    // Numbered like `cat -n`: right-aligned in six columns, then a tab.
    auto number = std::to_string(n);
    if (number.size() < 6)
      result.output.append(6 - number.size(), ' ');
    result.output += number;
    result.output += '\t';
    result.output += line;
    result.output += '\n';
    if (result.output.size() > 4 * ctx.output_cap)
      break; // the cap below keeps head and tail; no need to read a huge file to its end
  }
  result.truncated = cap_output(result.output, ctx.output_cap);
  return result;
}

} // namespace

tool_spec read_tool() {
  tool_spec spec;
  spec.name = "read";
  spec.description = "Read a text file and return its lines prefixed with line numbers. "
                     "start_line and end_line (1-based, inclusive) select a range.";
  spec.input_schema = {
    {"type", "object"},
    {"properties",
     {{"path", {{"type", "string"}, {"description", "file to read"}}},
      {"start_line", {{"type", "integer"}, {"description", "first line, from 1"}}},
      {"end_line", {{"type", "integer"}, {"description", "last line, inclusive"}}}}},
    {"required", {"path"}}};
  spec.block_names = {"read"};
  spec.read_only = true;
  spec.examples = {{"hello.txt", ""}};
  spec.input_from_block = [](std::string_view args, std::string_view) {
    return nlohmann::json{{"path", std::string{args}}};
  };
  spec.run = run_read;
  return spec;
}

} // namespace troupe
