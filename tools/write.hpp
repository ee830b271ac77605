#pragma once

#include <string>

#include "tools/tool_spec.hpp"

namespace troupe {

/// Returns the `write` tool (block names `write` and gptme's `save`): write a whole file,
/// creating parent directories.
tool_spec write_tool();

/// Writes `content` to `path` whole, creating parent directories. Returns an error message,
/// or an empty string on success. Shared by write, edit and patch.
std::string write_whole_file(const std::filesystem::path& path, const std::string& content);

/// Reads a whole regular file into `content`. Returns an error message, or empty on success.
std::string read_whole_file(const std::filesystem::path& path, std::string& content);

} // namespace troupe
