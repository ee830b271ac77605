#pragma once
// The walk every search tool (glob, grep) makes over the workspace.

#include <filesystem>
#include <functional>
#include <string>

#include "tools/tool_spec.hpp"

namespace troupe {

/// Walks the files under `root` as `walk_files` does, honouring the ignore files found there,
/// passing over the directories a read deny rule of `ctx` forbids (counted in `denied`), and
/// stopping once the call is cancelled. `visit` returns false to stop early. Returns false
/// when the walk was cut short by a cancel.
bool walk_search_tree(const tool_context& ctx, const std::filesystem::path& root,
                      denied_paths& denied,
                      const std::function<bool(const std::filesystem::path& file,
                                               const std::string& relative)>& visit);

} // namespace troupe
