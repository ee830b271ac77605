#include "tools/read.hpp"

#include "tools/real_path.hpp"
#include "tools/sandbox.hpp"

#include <algorithm>
#include <fstream>
#include <string_view>

namespace troupe {

namespace {

// Appends line n to out, numbered like `cat -n`: right-aligned in six columns, then a tab.
void append_numbered(std::string& out, int64_t n, std::string_view line) {
  auto number = std::to_string(n);
  if (number.size() < 6)
    out.append(6 - number.size(), ' ');
  out += number;
  out += '\t';
  out += line;
  out += '\n';
}

tool_result run_read(const nlohmann::json& input, const tool_context& ctx) {
  auto path = resolve_path(ctx, input.at("path").get<std::string>());
  int64_t first = input.value("start_line", int64_t{1});
  int64_t last = input.value("end_line", int64_t{0});
  if (first < 1 || (last != 0 && last < first))
    return error_result("invalid line range " + std::to_string(first) + ".." +
                        std::to_string(last) + ": lines count from 1 and end_line >= start_line");
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status))
    return error_result("cannot read " + path.string() + ": no such file");
  if (std::filesystem::is_directory(status))
    return error_result(path.string() + " is a directory, not a file");
  // FIFOs, devices and sockets can block or never end: only regular files are read.
  if (!std::filesystem::is_regular_file(status))
    return error_result(path.string() + " is not a regular file");
  if (ctx.sandbox)
    if (auto real = real_location(path); real && ctx.sandbox->hides(*real))
      return error_result("cannot read " + path.string() + ": it leads to " + real->string() +
                          ", in the host's /tmp, which the sandbox hides behind its own");
  if (!ctx.approved_path.empty()) {
    auto real = real_location(path);
    auto moved = moved_since_approval(path, real ? *real : path, ctx.approved_path);
    if (!moved.empty())
      return error_result(moved);
  }
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return error_result("cannot read " + path.string() + ": permission denied");
  if (starts_binary(in))
    return error_result(path.string() + " is a binary file (" +
                        std::to_string(std::filesystem::file_size(path, ec)) +
                        " bytes); read shows text only");

  // Read in chunks with a byte budget, so a huge file or one endless line stays bounded.
  const size_t budget = 4 * ctx.output_cap;
  tool_result result;
  std::string partial; // the current line, cut at the budget
  char chunk[65536];
  int64_t n = 1;
  bool done = false;
  bool stopped_early = false;
  while (!done) {
    in.read(chunk, sizeof chunk);
    auto got = static_cast<size_t>(in.gcount());
    if (got == 0)
      break;
    std::string_view data{chunk, got};
    for (size_t pos = 0; pos < data.size();) {
      auto newline = data.find('\n', pos);
      auto end = newline == std::string_view::npos ? data.size() : newline;
      if (n >= first && partial.size() < budget)
        partial.append(data.substr(pos, std::min(end - pos, budget - partial.size())));
      if (newline == std::string_view::npos)
        break; // the line goes on in the next chunk
      if (n >= first)
        append_numbered(result.output, n, partial);
      partial.clear();
      pos = newline + 1;
      ++n;
      if (last != 0 && n > last) {
        done = true;
        break;
      }
      if (result.output.size() > budget) {
        done = stopped_early = true;
        break;
      }
    }
  }
  if (!done && !partial.empty() && n >= first)
    append_numbered(result.output, n, partial); // a last line without its newline
  if (stopped_early)
    result.output += "[stopped reading at " + std::to_string(budget) +
                     " bytes of output; use start_line/end_line to read further]\n";
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
  spec.rule_subject = "path";
  spec.examples = {{"hello.txt", ""}};
  spec.input_from_block = [](std::string_view args, std::string_view) {
    return nlohmann::json{{"path", std::string{args}}};
  };
  spec.run = run_read;
  return spec;
}

} // namespace troupe
