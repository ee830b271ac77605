#include "tools/write.hpp"

#include <fstream>
#include <sstream>
#include <system_error>

namespace troupe {

std::string write_whole_file(const std::filesystem::path& path, const std::string& content) {
  std::error_code ec;
  if (path.has_parent_path())
    std::filesystem::create_directories(path.parent_path(), ec);
  if (ec)
    return "cannot create directory " + path.parent_path().string() + ": " + ec.message();
  if (std::filesystem::is_directory(path, ec))
    return path.string() + " is a directory";
  std::ofstream out{path, std::ios::binary | std::ios::trunc};
  if (!out)
    return "cannot open " + path.string() + " for writing";
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.close();
  if (!out)
    return "writing " + path.string() + " failed";
  return {};
}

std::string read_whole_file(const std::filesystem::path& path, std::string& content) {
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status))
    return "cannot read " + path.string() + ": no such file";
  if (!std::filesystem::is_regular_file(status))
    return path.string() + " is not a regular file";
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return "cannot read " + path.string() + ": permission denied";
  std::ostringstream buffer;
  buffer << in.rdbuf();
  content = std::move(buffer).str();
  return {};
}

namespace {

tool_result run_write(const nlohmann::json& input, const tool_context& ctx) {
  auto name = input.at("path").get<std::string>();
  if (name.empty())
    return error_result("write needs a file path: write the block as ```write PATH");
  auto path = resolve_path(ctx, name);
  auto content = input.at("content").get<std::string>();
  std::error_code ec;
  bool existed = std::filesystem::exists(path, ec);
  if (auto problem = write_whole_file(path, content); !problem.empty())
    return error_result(problem);
  tool_result result;
  result.output = std::string{existed ? "Overwrote " : "Created "} + path.string() + " (" +
                  std::to_string(content.size()) + " bytes)";
  return result;
}

} // namespace

tool_spec write_tool() {
  tool_spec spec;
  spec.name = "write";
  spec.description = "Write a file with the given content, replacing it if it exists and "
                     "creating missing parent directories. Relative paths are resolved "
                     "against the workspace. To change part of a file, prefer edit or patch.";
  spec.input_schema = {
    {"type", "object"},
    {"properties",
     {{"path", {{"type", "string"}, {"description", "file to write"}}},
      {"content", {{"type", "string"}, {"description", "the whole new content"}}}}},
    {"required", {"path", "content"}}};
  spec.block_names = {"write", "save"};
  spec.examples = {{"hello.txt", "Hello, world!\n"}};
  spec.writes_files = true;
  spec.rule_subject = "path";
  spec.input_from_block = [](std::string_view args, std::string_view body) {
    return nlohmann::json{{"path", std::string{args}}, {"content", std::string{body}}};
  };
  spec.run = run_write;
  return spec;
}

} // namespace troupe
