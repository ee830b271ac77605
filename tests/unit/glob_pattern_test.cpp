#include <doctest/doctest.h>

#include <string>

#include "support/test_support.hpp"
#include "tools/glob.hpp"
#include "tools/path_match.hpp"

using namespace troupe;
using namespace troupe::test;

namespace {

std::string repeat(const std::string& piece, int n) {
  std::string out;
  for (int i = 0; i < n; ++i)
    out += piece;
  return out;
}

} // namespace

TEST_CASE("glob semantics kept: ** forms, classes, nested braces, literals") {
  CHECK(glob_match("**", ""));
  CHECK(glob_match("**", "a/b"));
  CHECK_FALSE(glob_match("a/**", "a"));
  CHECK(glob_match("a/**", "a/"));
  CHECK(glob_match("src/**.cpp", "src/a/b.cpp")); // `**` not before `/` crosses directories
  CHECK(glob_match("a/**/", "a/b/c"));            // a trailing `**/` matches everything left
  CHECK(glob_match("x**/y", "xfoo/bar/y"));
  CHECK(glob_match("x**/y", "xy"));
  CHECK_FALSE(glob_match("[a/b]", "/")); // a class never matches '/'
  CHECK(glob_match("[]]", "]"));
  CHECK(glob_match("[", "["));                // an open class is a literal
  CHECK(glob_match("{a", "{a"));              // so is an open brace
  CHECK(glob_match("{a,{b,c}d}.x", "cd.x"));  // nested groups
  CHECK(glob_match("{a,{b,c}d}.x", "a.x"));
  CHECK_FALSE(glob_match("{a,{b,c}d}.x", "c.x"));
  CHECK(glob_match("{,x}y", "y"));
  CHECK(glob_match("/tmp/**", "/tmp/a/b"));
  CHECK(glob_match("*", "\xc3\xa9"));
}

// Not timed: before the automaton these took minutes (stars) or forever (braces); a hang here
// is the failure.
TEST_CASE("pathological patterns finish: many stars, many brace groups") {
  std::string name(60, 'a');
  for (int stars = 7; stars <= 30; ++stars) {
    CAPTURE(stars);
    auto pattern = repeat("*a", stars - 1) + "*b";
    CHECK_FALSE(glob_match(pattern, name));
    CHECK_FALSE(glob_match("**/" + pattern, name));
    CHECK(glob_match(pattern, name + "b"));
  }
  CHECK(glob_match(repeat("{a,a}", 40), std::string(40, 'a')));
  CHECK_FALSE(glob_match(repeat("{a,a}", 40), std::string(40, 'a') + "b"));
  CHECK_FALSE(glob_match(repeat("**/", 200) + "x", repeat("a/", 200) + "y"));
  // The fuzzer's finding (fuzz/corpus/glob/star_storm_finding): runs of stars around a slash
  // against a path of bytes that match nothing took the old recursive matcher over 25 s.
  auto stars = std::string(14, '*') + "/" + std::string(7, '*') + std::string(1, '\0') + "[";
  auto bytes = "\xfft)t}\n!fi\nt\xff\xff\xff\xff\xd5\xa6\xf5\xf6\xff\xff\xff" +
               std::string(4, '\0') + "[\n";
  CHECK_FALSE(glob_match(stars, bytes));
}

TEST_CASE("brace groups, their nesting and the pattern's length are capped with a clear error") {
  CHECK_FALSE(glob_pattern_error(repeat("{a,a}", 40)));
  auto many = repeat("{a,b}", 501);
  REQUIRE(glob_pattern_error(many));
  CHECK(*glob_pattern_error(many) ==
        "invalid glob pattern: the pattern has more than 1000 brace alternatives");
  CHECK_FALSE(glob_match(many, repeat("a", 501)));
  auto deep = repeat("{a,", 11) + repeat("}", 11);
  REQUIRE(glob_pattern_error(deep));
  CHECK(glob_pattern_error(deep)->find("nested deeper than 10") != std::string::npos);
  CHECK_FALSE(glob_pattern_error(repeat("{a,", 10) + repeat("}", 10)));
  auto deeper = repeat("{", 2000) + repeat("}", 2000); // no recursion past the cap either
  CHECK(glob_pattern_error(deeper));
  CHECK(glob_pattern_error(std::string(5000, 'a'))->find("longer than 4096") != std::string::npos);
  temp_dir dir;
  write_file(dir / "a.txt", "");
  auto r = glob_tool().run({{"pattern", many}}, context_in(dir));
  CHECK(r.is_error);
  CHECK(r.output.find("more than 1000 brace alternatives") != std::string::npos);
}
