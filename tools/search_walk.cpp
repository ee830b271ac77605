#include "tools/search_walk.hpp"

#include "tools/path_match.hpp"

namespace troupe {

bool walk_search_tree(const tool_context& ctx, const std::filesystem::path& root,
                      denied_paths& denied,
                      const std::function<bool(const std::filesystem::path& file,
                                               const std::string& relative)>& visit) {
  bool cancelled = false;
  walk_files(
    root, ignore_rules::load(root),
    [&](const std::filesystem::path& file, const std::string& relative) {
      if (cancel_requested(ctx)) {
        cancelled = true;
        return false;
      }
      return visit(file, relative);
    },
    [&](const std::filesystem::path& directory) { return denied.check(ctx, directory); });
  return !cancelled;
}

} // namespace troupe
