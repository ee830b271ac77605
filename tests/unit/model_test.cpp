#include <doctest/doctest.h>

#include "protocol/model.hpp"
#include "protocol/step.hpp"

using namespace troupe;
using nlohmann::json;

TEST_CASE("model reply, usage and descriptors round-trip through JSON") {
  model_reply r;
  r.assistant.id = "a";
  r.assistant.role = role::assistant;
  r.assistant.content = "hi";
  r.stop_reason = "max_tokens";
  r.usage = {10, 20, 3, 4};
  r.error = model_error_kind::prompt_too_long;
  r.error_status = 400;
  r.error_message = "prompt is too long";
  auto back = json(r).get<model_reply>();
  CHECK(back.assistant == r.assistant);
  CHECK(back.usage == r.usage);
  CHECK(back.error == r.error);
  CHECK(json(back) == json(r));

  tool_descriptor d{"shell", "runs", {{"type", "object"}}};
  CHECK(json(json(d).get<tool_descriptor>()) == json(d));
}

TEST_CASE("usage adds up") {
  token_usage total{1, 2, 3, 4};
  total += token_usage{10, 20, 30, 40};
  CHECK(total == token_usage{11, 22, 33, 44});
}
