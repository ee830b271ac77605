# Thin wrapper: dependencies, configure, build, test, demo. The real build is CMake + Ninja.
BUILD_DIR ?= build
BUILD_TYPE ?= Debug
JOBS ?= 2
CMAKE_FLAGS ?=

ifeq ($(CI),true)
  CMAKE_FLAGS += -DTROUPE_WERROR=ON
endif

.PHONY: deps configure build demo test bench asan clean

deps:
	@scripts/install-deps.sh

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)

configure: deps $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

demo: build
	$(BUILD_DIR)/troupe demo

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

bench: deps
	cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DTROUPE_BUILD_TESTS=OFF $(CMAKE_FLAGS)
	cmake --build build-release -j $(JOBS)
	bench/run_all.sh build-release

asan: deps
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTROUPE_SANITIZE=ON $(CMAKE_FLAGS)
	cmake --build build-asan -j $(JOBS)
	cd build-asan && UBSAN_OPTIONS=suppressions=$(CURDIR)/tests/ubsan.supp ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD_DIR) build-release build-asan
