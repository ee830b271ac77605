#include "protocol/permission.hpp"

#include "protocol/json_enum.hpp"

namespace troupe {

namespace {

constexpr detail::enum_names<permission_answer, 3> answer_names{{
  {permission_answer::yes, "yes"},
  {permission_answer::no, "no"},
  {permission_answer::always, "always"},
}};

constexpr detail::enum_names<denial_cause, 2> cause_names{{
  {denial_cause::refused, "refused"},
  {denial_cause::plan_mode, "plan_mode"},
}};

} // namespace

const char* to_string(permission_answer a) { return detail::enum_to_name(answer_names, a); }

void to_json(nlohmann::json& j, const permission_answer& x) { j = to_string(x); }

void from_json(const nlohmann::json& j, permission_answer& x) {
  x = detail::enum_from_json(answer_names, j, "permission answer");
}

const char* to_string(denial_cause c) { return detail::enum_to_name(cause_names, c); }

void to_json(nlohmann::json& j, const denial_cause& x) { j = to_string(x); }

void from_json(const nlohmann::json& j, denial_cause& x) {
  x = detail::enum_from_json(cause_names, j, "denial cause");
}

} // namespace troupe
