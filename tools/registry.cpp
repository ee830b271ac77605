#include "tools/registry.hpp"

#include <algorithm>

#include "tools/complete.hpp"
#include "tools/edit.hpp"
#include "tools/glob.hpp"
#include "tools/grep.hpp"
#include "tools/ls.hpp"
#include "tools/patch.hpp"
#include "tools/read.hpp"
#include "tools/shell.hpp"
#include "tools/task.hpp"
#include "tools/task_wait.hpp"
#include "tools/task_output.hpp"
#include "tools/task_stop.hpp"
#include "tools/todo.hpp"
#include "tools/write.hpp"

namespace troupe {

const tool_spec* tool_registry::find(std::string_view name) const {
  auto i = std::find_if(tools_.begin(), tools_.end(), [&](auto& t) { return t.name == name; });
  return i == tools_.end() ? nullptr : &*i;
}

const tool_spec* tool_registry::find_block(std::string_view language) const {
  for (auto& tool : tools_)
    for (auto& block : tool.block_names)
      if (block == language)
        return &tool;
  return nullptr;
}

tool_registry::tool_registry(std::vector<tool_spec> tools) : tools_(std::move(tools)) {
  std::vector<tool_descriptor> described;
  for (auto& tool : tools_)
    described.push_back(describe(tool));
  descriptors_ = std::move(described);
}

std::vector<std::string> tool_registry::names() const {
  std::vector<std::string> result;
  for (auto& tool : tools_)
    result.push_back(tool.name);
  return result;
}

tool_registry make_builtin_registry() {
  return tool_registry{{shell_tool(), read_tool(), write_tool(), edit_tool(), patch_tool(),
                        glob_tool(), grep_tool(), ls_tool(), task_output_tool(), task_stop_tool(),
                        todo_tool(), complete_tool(), task_tool(), task_wait_tool()}};
}

} // namespace troupe
