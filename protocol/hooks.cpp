#include "protocol/hooks.hpp"

namespace troupe {

const char* to_string(hook_point p) {
  switch (p) {
    case hook_point::session_start:
      return "session.start";
    case hook_point::turn_pre:
      return "turn.pre";
    case hook_point::step_pre:
      return "step.pre";
    case hook_point::generation_post:
      return "generation.post";
    case hook_point::turn_post:
      return "turn.post";
    case hook_point::loop_continue:
      return "loop.continue";
    case hook_point::pre_compact:
      return "compact.pre";
    case hook_point::post_compact:
      return "compact.post";
    case hook_point::session_end:
      return "session.end";
  }
  return "unknown";
}

} // namespace troupe
