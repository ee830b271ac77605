// When the HTTP model client retries: the provider's delay headers, clamped, and the back-off
// with its jitter, never past the cap.

#include <doctest/doctest.h>

#include "actors/http_retry.hpp"

using namespace troupe;
using std::chrono::milliseconds;

namespace {

milliseconds delay_for(const std::string& name, const std::string& value, int32_t attempt = 0,
                       double jitter = 0) {
  return retry_delay(http_model_config{}, attempt, {{name, value}}, jitter);
}

} // namespace

TEST_CASE("valid delay headers are honoured, in seconds or milliseconds") {
  CHECK(delay_for("retry-after", "2") == milliseconds{2000});
  CHECK(delay_for("retry-after", "0.01") == milliseconds{10});
  CHECK(delay_for("retry-after", " 1.5 ") == milliseconds{1500});
  CHECK(delay_for("retry-after-ms", "20") == milliseconds{20});
  CHECK(delay_for("retry-after-ms", "0") == milliseconds{0});
}

TEST_CASE("huge or infinite delays give the longest back-off, never an overflow") {
  for (std::string value : {"inf", "INF", "infinity", "1e300", "1e309", "9223372036854775807"})
    for (std::string name : {"retry-after", "retry-after-ms"}) {
      CAPTURE(name);
      CAPTURE(value);
      CHECK(delay_for(name, value) == milliseconds{30000});
    }
  CHECK(delay_for("retry-after", "3600") == milliseconds{30000});
}

TEST_CASE("negative, NaN and unparsable delays are ignored for the back-off") {
  // The back-off of attempt 2 without jitter: 0.5 s * 2^2.
  for (std::string value : {"nan", "-nan", "NaN", "-5", "-inf", "", "soon", "5 s", "1e3x",
                            "Wed, 21 Oct 2015 07:28:00 GMT"})
    for (std::string name : {"retry-after", "retry-after-ms"}) {
      CAPTURE(name);
      CAPTURE(value);
      CHECK(delay_for(name, value, 2) == milliseconds{2000});
    }
  // An ignored header leaves a valid one of the other name to be honoured.
  http_headers both{{"retry-after-ms", "nan"}, {"retry-after", "3"}};
  CHECK(retry_delay(http_model_config{}, 0, both, 0) == milliseconds{3000});
}

TEST_CASE("the back-off's jitter never takes a delay past the cap") {
  http_model_config config;
  for (int32_t attempt = 0; attempt < 40; ++attempt)
    for (double jitter : {-0.25, -0.1, 0.0, 0.1, 0.25}) {
      CAPTURE(attempt);
      CAPTURE(jitter);
      auto delay = retry_delay(config, attempt, {}, jitter);
      CHECK(delay <= config.max_retry_delay);
      CHECK(delay >= milliseconds{375});
    }
  CHECK(retry_delay(config, 0, {}, 0.25) == milliseconds{625});
  CHECK(retry_delay(config, 3, {}, -0.25) == milliseconds{3000});
  // Below the cap the jitter spreads; at it, it can only shorten.
  CHECK(retry_delay(config, 10, {}, -0.25) == milliseconds{22500});
  CHECK(retry_delay(config, 10, {}, 0.25) == milliseconds{30000});
}
