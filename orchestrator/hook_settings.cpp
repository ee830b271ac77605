#include "orchestrator/hook_settings.hpp"

#include <cmath>
#include <regex>

namespace troupe {

expected<std::vector<hook_command>> parse_hook_settings(const nlohmann::json& settings,
                                                        const std::filesystem::path& file) {
  std::vector<hook_command> commands;
  auto hooks = settings.find("hooks");
  if (hooks == settings.end())
    return commands;
  auto where = "settings file " + file.string() + ": ";
  if (!hooks->is_object())
    return failure{where + "\"hooks\" must be an object of events"};
  for (auto& [event, groups] : hooks->items()) {
    auto known = parse_hook_event(event);
    if (!known)
      return failure{where + known.error()};
    if (!groups.is_array())
      return failure{where + "hooks." + event + " must be an array of {matcher, hooks}"};
    for (auto& group : groups) {
      if (!group.is_object() || !group.contains("hooks") || !group["hooks"].is_array())
        return failure{where + "each entry of hooks." + event +
                       " must be an object with a \"hooks\" array"};
      if (group.contains("matcher") && !group["matcher"].is_string())
        return failure{where + "a matcher of hooks." + event + " must be a string"};
      auto matcher = group.value("matcher", std::string{});
      if (!matcher.empty() && matcher != "*") {
        try {
          std::regex check{matcher};
        } catch (const std::regex_error& e) {
          return failure{where + "the matcher \"" + matcher + "\" of hooks." + event +
                         " is not a regular expression: " + e.what()};
        }
      }
      for (auto& hook : group["hooks"]) {
        if (!hook.is_object())
          return failure{where + "each hook of hooks." + event + " must be an object"};
        if (hook.contains("type") && !hook["type"].is_string())
          return failure{where + "a hook's \"type\" in hooks." + event + " must be a string"};
        auto type = hook.value("type", std::string{"command"});
        if (type != "command")
          return failure{where + "hook type \"" + type + "\" in hooks." + event +
                         " is not supported (only \"command\")"};
        auto command = hook.find("command");
        if (command == hook.end() || !command->is_string() || command->get<std::string>().empty())
          return failure{where + "a hook of hooks." + event + " needs a \"command\" string"};
        hook_command parsed;
        parsed.event = *known;
        parsed.matcher = matcher;
        parsed.command = command->get<std::string>();
        if (auto timeout = hook.find("timeout"); timeout != hook.end()) {
          if (!timeout->is_number() || timeout->get<double>() <= 0 ||
              timeout->get<double>() > 86400)
            return failure{where + "the timeout of a hook of hooks." + event +
                           " must be a number of seconds above 0, at most 86400"};
          parsed.timeout =
            std::chrono::milliseconds{static_cast<int64_t>(std::ceil(timeout->get<double>() * 1000))};
        }
        commands.push_back(std::move(parsed));
      }
    }
  }
  return commands;
}

} // namespace troupe
