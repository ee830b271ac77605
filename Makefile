# Thin wrapper: dependencies, configure, build, test, demo. The real build is CMake + Ninja.
# build/: what users run, optimised (Release, no tests). build-debug/: the test suite's build
# (Debug, every test program). Each has its own CMake cache; neither rebuilds the other.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
TEST_DIR ?= build-debug
TEST_BUILD_TYPE ?= Debug
JOBS ?= 2
CMAKE_FLAGS ?=
# Seconds each fuzz target runs in `make fuzz-smoke`.
FUZZ_SECONDS ?= 60

ifeq ($(CI),true)
  CMAKE_FLAGS += -DTROUPE_WERROR=ON
endif

.PHONY: deps sdk-deps mcp-deps fuzz-deps configure test-configure build demo install test-build test bench asan fuzz-build fuzz-smoke mutants clean

# Where `make install` puts bin/troupe.
PREFIX ?= $(HOME)/.local

deps:
	@scripts/install-deps.sh

# Configured every time (a second or two): a build/ made by an older Makefile (Debug, with the
# tests) becomes the Release build it must be, not the binary `make install` copies unchanged.
configure: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DTROUPE_BUILD_TESTS=OFF \
	  $(CMAKE_FLAGS)

test-configure: deps
	cmake -S . -B $(TEST_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(TEST_BUILD_TYPE) \
	  -DTROUPE_BUILD_TESTS=ON $(CMAKE_FLAGS)

# Only the binary: the benchmarks are built by `make bench`.
build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target troupe

demo: build
	$(BUILD_DIR)/troupe demo

install: build
	cmake --install $(BUILD_DIR) --prefix $(PREFIX)

# The Claude Agent SDK the tests drive troupe with, as pinned (its platform binaries are
# optional and not needed: the SDK runs troupe).
tests/sdk/node_modules/.package-lock.json: tests/sdk/package-lock.json tests/sdk/package.json
	cd tests/sdk && npm ci --omit=optional --ignore-scripts --no-audit --no-fund

sdk-deps: tests/sdk/node_modules/.package-lock.json

# The real MCP servers the MCP tests talk to (server-filesystem, server-everything), as pinned.
tests/mcp/node_modules/.package-lock.json: tests/mcp/package-lock.json tests/mcp/package.json
	cd tests/mcp && npm ci --omit=optional --ignore-scripts --no-audit --no-fund

mcp-deps: tests/mcp/node_modules/.package-lock.json

test-build: test-configure
	cmake --build $(TEST_DIR) -j $(JOBS)

test: test-build sdk-deps mcp-deps
	cd $(TEST_DIR) && ctest --output-on-failure -j $(JOBS)

bench: configure mcp-deps
	cmake --build $(BUILD_DIR) -j $(JOBS)
	bench/run_all.sh $(BUILD_DIR)

asan: deps
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTROUPE_SANITIZE=ON $(CMAKE_FLAGS)
	cmake --build build-asan -j $(JOBS)
	cd build-asan && UBSAN_OPTIONS=suppressions=$(CURDIR)/tests/ubsan.supp ctest --output-on-failure -j $(JOBS)

# libFuzzer targets (fuzz/): clang and its runtime are needed only here, not by `make build`.
fuzz-deps: deps
	@scripts/install-deps.sh fuzz

fuzz-build: fuzz-deps
	cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++-14 \
	  -DTROUPE_FUZZ=ON -DTROUPE_BUILD_TESTS=OFF $(CMAKE_FLAGS)
	cmake --build build-fuzz -j $(JOBS) --target fuzz_all

# Runs every target for FUZZ_SECONDS from its seed corpus; fails when one finds a crash.
fuzz-smoke: fuzz-build
	scripts/fuzz-smoke.sh build-fuzz $(FUZZ_SECONDS)

# Breaks each behaviour users depend on (tests/mutants.jsonl), one at a time, in a scratch copy
# (build-mutants/): the suite must fail on every one. Slow, so not part of `make test`.
# MUTANTS_ARGS passes options on, e.g. MUTANTS_ARGS="--only retry".
mutants: deps
	python3 tests/mutants.py --work build-mutants --jobs $(JOBS) $(MUTANTS_ARGS)

clean:
	rm -rf $(BUILD_DIR) $(TEST_DIR) build-release build-asan build-fuzz build-mutants
