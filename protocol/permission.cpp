#include "protocol/permission.hpp"

#include "protocol/json_enum.hpp"

namespace troupe {

namespace {

constexpr detail::enum_names<permission_answer, 3> answer_names{{
  {permission_answer::yes, "yes"},
  {permission_answer::no, "no"},
  {permission_answer::always, "always"},
}};

} // namespace

const char* to_string(permission_answer a) { return detail::enum_to_name(answer_names, a); }

void to_json(nlohmann::json& j, const permission_answer& x) { j = to_string(x); }

void from_json(const nlohmann::json& j, permission_answer& x) {
  x = detail::enum_from_json(answer_names, j, "permission answer");
}

} // namespace troupe
