// The spellings of permission answers (protocol/permission.cpp).

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "protocol/permission.hpp"

using namespace troupe;
using nlohmann::json;

TEST_CASE("every permission answer has one spelling that reads back as itself") {
  struct row {
    permission_answer answer;
    const char* name;
  };
  for (auto [answer, name] : {row{permission_answer::yes, "yes"}, row{permission_answer::no, "no"},
                              row{permission_answer::always, "always"}}) {
    CAPTURE(name);
    CHECK(std::string{to_string(answer)} == name);
    CHECK(json(answer) == name);
    CHECK(json(name).get<permission_answer>() == answer);
  }
}

TEST_CASE("an unknown permission answer is an error that names it") {
  for (const char* bad : {"", "y", "Yes", "never", "always "}) {
    CAPTURE(bad);
    try {
      json(bad).get<permission_answer>();
      FAIL("read an answer from '" << bad << "'");
    } catch (const json::exception& e) {
      CHECK(std::string{e.what()}.find(std::string{"unknown permission answer '"} + bad + "'") !=
            std::string::npos);
    }
  }
}
