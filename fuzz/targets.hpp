#pragma once
// The fuzz targets: each takes one input and drives a parser of untrusted bytes with it. A
// target returns 0; a crash, a sanitizer report or a failed check (fuzz_check) is a finding.
// libFuzzer calls them through entry.cpp; replay_main.cpp feeds them the seed corpora in the
// regular build, so the corpora stay exercised where libFuzzer is not available.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace troupe::fuzz {

int tool_calls(const uint8_t* data, size_t size);
int sse_openai(const uint8_t* data, size_t size);
int sse_anthropic(const uint8_t* data, size_t size);
int transcript(const uint8_t* data, size_t size);
int queue(const uint8_t* data, size_t size);
int settings(const uint8_t* data, size_t size);
int glob(const uint8_t* data, size_t size);

/// Aborts with a message when an invariant of a target does not hold (a finding).
void fuzz_check(bool holds, const char* what);

/// A file of the process's own under a private temporary directory, for the targets that read
/// files; the same path on every call, so a run does not fill the disk.
const char* scratch_file(const char* name);

/// Writes data to path whole (truncating).
void write_scratch(const char* path, const uint8_t* data, size_t size);

} // namespace troupe::fuzz
