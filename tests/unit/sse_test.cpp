// The SSE parser: events across chunk boundaries, and the cap on one event; what is not UTF-8
// in an event, replaced before it is parsed as JSON.

#include <doctest/doctest.h>

#include "providers/sse.hpp"

using namespace troupe;

TEST_CASE("SSE events are split the same whatever the chunk boundaries") {
  std::string stream = "event: a\r\ndata: one\r\ndata: two\r\n\r\n: keep-alive\n\ndata: three\r\r";
  std::vector<sse_event> expected = {{"a", "one\ntwo"}, {"", "three"}};
  for (size_t step : {size_t{1}, size_t{2}, size_t{5}, stream.size()}) {
    CAPTURE(step);
    sse_parser parser;
    std::vector<sse_event> got;
    for (size_t i = 0; i < stream.size(); i += step)
      for (auto& e : parser.feed(std::string_view{stream}.substr(i, step)))
        got.push_back(e);
    CHECK(got == expected);
    CHECK(parser.events() == 2);
    CHECK_FALSE(parser.has_partial());
  }
}

TEST_CASE("an event at the cap is accepted, one byte more stops the parser") {
  // "data: " is not counted: the cap is on what the parser holds (the event's data).
  std::string at_cap(1024, 'x');
  sse_parser parser{1024};
  auto events = parser.feed("data: " + at_cap.substr(6) + "\n\n");
  REQUIRE(events.size() == 1);
  CHECK_FALSE(parser.oversized());

  auto over = parser.feed("data: " + at_cap + "y\n\ndata: after\n\n");
  CHECK(over.empty());
  CHECK(parser.oversized());
  CHECK(parser.oversized_excerpt() == "data: " + at_cap.substr(0, 194));
  CHECK(parser.feed("data: more\n\n").empty()); // stopped for good
  CHECK_FALSE(parser.has_partial());            // and holds nothing
}

TEST_CASE("an endless line is stopped at the cap, however it is chunked") {
  for (size_t chunk : {size_t{1}, size_t{100}, size_t{1} << 16}) {
    CAPTURE(chunk);
    sse_parser parser{4096};
    std::string piece(chunk, 'z');
    size_t fed = 0;
    auto events = parser.feed("data: {\"ok\":1}\n\n");
    CHECK(events.size() == 1);
    while (!parser.oversized() && fed < (size_t{1} << 20)) {
      CHECK(parser.feed(piece).empty());
      fed += piece.size();
    }
    CHECK(parser.oversized());
    CHECK(fed <= 4096 + chunk); // noticed at the chunk that crossed it, not later
    CHECK(parser.oversized_excerpt().size() == 200);
  }
}

TEST_CASE("many data lines of one event count towards the cap together") {
  sse_parser parser{1000};
  std::string line = "data: " + std::string(90, 'd') + "\n";
  size_t lines = 0;
  while (!parser.oversized() && lines < 1000) {
    CHECK(parser.feed(line).empty());
    ++lines;
  }
  CHECK(parser.oversized());
  CHECK(lines == 11); // 10 lines hold 909 bytes; the 11th would take it past 1000
  CHECK(parser.oversized_excerpt().rfind("data: ddd", 0) == 0);
}

TEST_CASE("what is not UTF-8 is replaced byte by byte, and only that") {
  const std::string r = "\xef\xbf\xbd"; // U+FFFD
  // Well-formed text comes back as it was, ASCII or not.
  CHECK(sanitize_utf8("") == "");
  CHECK(sanitize_utf8(R"({"content":"plain"})") == R"({"content":"plain"})");
  CHECK(sanitize_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80!") ==
        "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80!");
  // Each byte of what breaks is replaced on its own, wherever it stands; what follows stays.
  CHECK(sanitize_utf8("\xff") == r);
  CHECK(sanitize_utf8("\xff" "ab") == r + "ab");
  CHECK(sanitize_utf8("ab\xff\xfe" "cd") == "ab" + r + r + "cd");
  CHECK(sanitize_utf8("a\xc3") == "a" + r);                     // cut off at the end
  CHECK(sanitize_utf8("a\xe2\x82" "b") == "a" + r + r + "b");      // cut off in the middle
  CHECK(sanitize_utf8("\xed\xa0\x80x") == r + r + r + "x");    // a surrogate
  CHECK(sanitize_utf8("\xc0\xaf" "x\xc3\xa9") == r + r + "x\xc3\xa9"); // overlong, then good
  CHECK(sanitize_utf8("\x80\xc3\xa9\x80") == r + "\xc3\xa9" + r); // stray continuations
}
