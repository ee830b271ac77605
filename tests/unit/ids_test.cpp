#include <doctest/doctest.h>

#include <set>

#include "store/ids.hpp"

using namespace troupe;

TEST_CASE("secrets are hex digits from the kernel, never repeated") {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    auto token = secret_hex(32);
    REQUIRE(token.size() == 32);
    CHECK(token.find_first_not_of("0123456789abcdef") == std::string::npos);
    seen.insert(token);
  }
  CHECK(seen.size() == 1000);
  CHECK(secret_hex(5).size() == 5);
}

TEST_CASE("session ids sort by creation time and name a directory") {
  auto id = new_session_id();
  CHECK(id.size() == std::string{"20261201-163137-49d099"}.size());
  CHECK(is_valid_session_id(id));
  CHECK_FALSE(is_valid_session_id("../x"));
  CHECK_FALSE(is_valid_session_id(""));
  CHECK_FALSE(is_valid_session_id(".."));
}

TEST_CASE("stable_hash_hex is FNV-1a, the same on every run and machine") {
  CHECK(stable_hash_hex("") == "cbf29ce484222325");
  CHECK(stable_hash_hex("a") == "af63dc4c8601ec8c");
  CHECK(stable_hash_hex("foobar") == "85944171f73967e8");
}
