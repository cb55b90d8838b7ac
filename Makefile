# onnxgrad: a thin wrapper over CMake.  See README.md.
#   make          build (Release) into build/
#   make test     install missing dependencies, build, run every test
#   make demo     install missing dependencies, build, run onnxgrad on the shipped model
#   make asan     the whole test suite under AddressSanitizer + UBSan (build-asan/)
#   make fuzz     libFuzzer over load + plan, then over the dataset readers (FUZZ_SECONDS each,
#                 default 60)
#   make bench    inference against onnxruntime, training steps and training throughput
#                 against PyTorch, 2 MPI ranks against 1 process (bench/)
#   make format   clang-format every C file
#   make install  install library, header, CLI, pkg-config and CMake files (PREFIX)
BUILD ?= build
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local
CMAKE_FLAGS ?=
FUZZ_SECONDS ?= 60
C_FILES = $(shell git ls-files '*.c' '*.h' 2>/dev/null || find src include tools tests -name '*.[ch]')

.PHONY: all build setup test demo asan fuzz bench format install clean

all: build

setup:
	@bash scripts/setup.sh

$(BUILD)/Makefile:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS)

build: $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

test: setup
	@$(MAKE) --no-print-directory build
	@bash tests/run_ctest.sh $(BUILD)

demo: setup
	@$(MAKE) --no-print-directory build
	@bash scripts/demo.sh $(BUILD)

asan: setup
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DOG_SANITIZE=ON $(CMAKE_FLAGS)
	cmake --build build-asan -j $(JOBS)
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		bash tests/run_ctest.sh build-asan

fuzz:
	@bash scripts/setup.sh --fuzz
	CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOG_FUZZ=ON -DOG_BACKEND_TESTS=OFF
	cmake --build build-fuzz -j $(JOBS) --target og_fuzz_load og_fuzz_data
	mkdir -p fuzz-corpus && cp -n tests/data/*.onnx tests/data/train/*.onnx fuzz-corpus/ 2>/dev/null || true
	ASAN_OPTIONS=allocator_may_return_null=1 ./build-fuzz/og_fuzz_load -max_total_time=$(FUZZ_SECONDS) \
		-max_len=65536 -rss_limit_mb=4096 -malloc_limit_mb=4096 -timeout=30 fuzz-corpus
	bash tests/fuzz/data_seeds.sh fuzz-corpus-data
	ASAN_OPTIONS=allocator_may_return_null=1 ./build-fuzz/og_fuzz_data -max_total_time=$(FUZZ_SECONDS) \
		-max_len=65536 -rss_limit_mb=4096 -malloc_limit_mb=4096 -timeout=30 fuzz-corpus-data

bench: setup
	@bash scripts/setup.sh --bench
	@$(MAKE) --no-print-directory build
	python3 bench/bench_inference.py --build $(BUILD)
	/usr/bin/python3 -W ignore bench/bench_train.py --build $(BUILD)
	/usr/bin/python3 -W ignore bench/bench_fit.py --build $(BUILD)
	/usr/bin/python3 -W ignore bench/bench_mpi.py --build $(BUILD)
	ONNXGRAD_LIBRARY=$(BUILD)/libonnxgrad.so PYTHONPATH=python python3 bench/bench_python.py
	python3 bench/bench_grad_create.py --build $(BUILD) --chains 10000,100000

format:
	clang-format -i $(C_FILES)

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) build-asan build-fuzz
