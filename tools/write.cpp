#include "tools/write.hpp"

#include "tools/real_path.hpp"

namespace troupe {

namespace {

tool_result run_write(const nlohmann::json& input, const tool_context& ctx) {
  auto name = input.at("path").get<std::string>();
  if (name.empty())
    return error_result("write needs a file path: write the block as ```write PATH");
  auto path = resolve_path(ctx, name);
  auto content = input.at("content").get<std::string>();
  // Written where the path really leads (what the permission check judged), from the
  // directory's descriptor: a link swapped in meanwhile cannot redirect it.
  auto file = resolved_file::resolve(path, true);
  if (!file)
    return error_result(file.error());
  if (auto moved = moved_since_approval(path, file->real_path(), ctx.approved_path);
      !moved.empty())
    return error_result(moved);
  if (auto refused = sandbox_refusal(ctx, file->real_path()); !refused.empty())
    return error_result(refused);
  bool existed = file->exists();
  if (auto problem = file->write(content); !problem.empty())
    return error_result(problem);
  tool_result result;
  result.output = std::string{existed ? "Overwrote " : "Created "} + shown_path(path, *file) +
                  " (" + std::to_string(content.size()) + " bytes)";
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
