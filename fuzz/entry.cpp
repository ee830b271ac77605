// libFuzzer's entry point for one target; the build names it with -DTROUPE_FUZZ_TARGET=<name>.

#include "fuzz/targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return troupe::fuzz::TROUPE_FUZZ_TARGET(data, size);
}
