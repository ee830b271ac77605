#include "tools/save.hpp"

#include <fstream>
#include <system_error>

namespace troupe {

namespace {

tool_result run_save(const nlohmann::json& input, const tool_context& ctx) {
  auto name = input.at("path").get<std::string>();
  if (name.empty())
    return error_result("save needs a file path: write the block as ```save PATH");
  auto path = resolve_path(ctx, name);
  auto content = input.at("content").get<std::string>();
  std::error_code ec;
  if (path.has_parent_path())
    std::filesystem::create_directories(path.parent_path(), ec);
  if (ec)
    return error_result("cannot create directory " + path.parent_path().string() + ": " +
                        ec.message());
  bool existed = std::filesystem::exists(path, ec);
  std::ofstream out{path, std::ios::binary | std::ios::trunc};
  if (!out)
    return error_result("cannot open " + path.string() + " for writing");
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.close();
  if (!out)
    return error_result("writing " + path.string() + " failed");
  tool_result result;
  result.output = std::string{existed ? "Overwrote " : "Created "} + path.string() + " (" +
                  std::to_string(content.size()) + " bytes)";
  return result;
}

} // namespace

tool_spec save_tool() {
  tool_spec spec;
  spec.name = "save";
  spec.description = "Write a file with the given content, replacing it if it exists and "
                     "creating missing parent directories. Relative paths are resolved "
                     "against the workspace.";
  spec.input_schema = {
    {"type", "object"},
    {"properties",
     {{"path", {{"type", "string"}, {"description", "file to write"}}},
      {"content", {{"type", "string"}, {"description", "the whole new content"}}}}},
    {"required", {"path", "content"}}};
  spec.block_names = {"save"};
  spec.examples = {{"hello.txt", "Hello, world!\n"}};
  spec.input_from_block = [](std::string_view args, std::string_view body) {
    return nlohmann::json{{"path", std::string{args}}, {"content", std::string{body}}};
  };
  spec.run = run_save;
  return spec;
}

} // namespace troupe
