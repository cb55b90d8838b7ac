# onnxgrad: a thin wrapper over CMake.  See README.md.
#   make          build (Release) into build/
#   make test     install missing dependencies, build, run every test
#   make demo     install missing dependencies, build, run onnxgrad on the shipped model
#   make asan     the whole test suite under AddressSanitizer + UBSan (build-asan/)
#   make tsan     the threading tests under ThreadSanitizer (build-tsan/): one session, one
#                 gradient object's instances and trainers used from 2 and 8 threads
#   make fuzz     every fuzz target of tests/fuzz/ (load, run, grad, save, npy, ckpt, data,
#                 and python: the binding under atheris) for FUZZ_SECONDS each (default 60),
#                 one after the other, from the kept seed corpora; results in
#                 fuzz-logs/summary.tsv
#   make bench    inference against onnxruntime, training steps against the PyPI PyTorch
#                 of bench/.venv (and Debian's), training throughput, 2 MPI ranks against
#                 1 process (bench/)
#   make format   clang-format every C file
#   make install  install library, header, CLI, pkg-config and CMake files (PREFIX)
BUILD ?= build
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local
CMAKE_FLAGS ?=
FUZZ_SECONDS ?= 60
C_FILES = $(shell git ls-files '*.c' '*.h' 2>/dev/null || find src include tools tests -name '*.[ch]')

.PHONY: all build setup test demo asan tsan fuzz bench format install clean

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

TSAN_TESTS = test_race test_busy test_threads test_instance test_workers test_fuse_ew
space := $(subst ,, )
# clang: gcc 12's ThreadSanitizer runtime crashes while loading libonnxgrad.so here
tsan:
	@bash scripts/setup.sh --fuzz
	CC=clang cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOG_TSAN=ON -DOG_BACKEND_TESTS=OFF $(CMAKE_FLAGS)
	cmake --build build-tsan -j $(JOBS) --target $(TSAN_TESTS)
	@cd build-tsan && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp" \
		OMP_NUM_THREADS=1 ctest --output-on-failure -R 'unit\.($(subst $(space),|,$(TSAN_TESTS)))$$'


FUZZ_TARGETS = load run grad save npy ckpt data python
fuzz:
	@bash scripts/setup.sh --fuzz
	CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOG_FUZZ=ON -DOG_BACKEND_TESTS=OFF
	cmake --build build-fuzz -j $(JOBS) --target $(addprefix og_fuzz_,$(filter-out python,$(FUZZ_TARGETS)))
	@$(MAKE) --no-print-directory build
	bash tests/fuzz/campaign.sh build-fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

bench: setup
	@bash scripts/setup.sh --bench
	@$(MAKE) --no-print-directory build
	python3 bench/bench_inference.py --build $(BUILD)
	bench/.venv/bin/python -W ignore bench/bench_train.py --build $(BUILD) --debian
	/usr/bin/python3 -W ignore bench/bench_fit.py --build $(BUILD)
	/usr/bin/python3 -W ignore bench/bench_mpi.py --build $(BUILD)
	ONNXGRAD_LIBRARY=$(BUILD)/libonnxgrad.so PYTHONPATH=python python3 bench/bench_python.py
	python3 bench/bench_grad_create.py --build $(BUILD) --chains 10000,100000

format:
	clang-format -i $(C_FILES)

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz
