# `make demo` and `make test` work on a fresh machine: each installs what is missing first.
PYTHON ?= python3
JOBS ?= 2
DEB_PACKAGES := libeigen3-dev libspdlog-dev catch2 clang clang-format libclang-rt-14-dev chromium ccache
PY_PACKAGES := tinygrad==0.14.0 pybind11 scikit-build-core numpy pytest hypothesis cmake ninja matplotlib pillow \
  mkdocs==1.6.1 mkdocstrings==1.0.8 mkdocstrings-python==2.0.11 scikit-learn==1.9.1 optuna==5.0.0 \
  dask==2026.8.0 distributed==2026.8.0 tqdm==4.70.1 ruff==0.17.6 lizard==1.24.3
WHEEL_BUILD := build/wheel
# The four builds of `make test` (the extension with its tests, ASan, TSan, the fuzzers) compile the same sources
# under other flags: ccache keeps each one's objects between runs (CMake reads the launcher from the environment),
# for any checkout of the repository (paths under it are hashed relative to it).
export CMAKE_CXX_COMPILER_LAUNCHER ?= $(shell command -v ccache)
export CCACHE_BASEDIR ?= $(CURDIR)
export CCACHE_NOHASHDIR ?= 1

UPSTREAM_CACHE ?= $(HOME)/.cache/tinytpu/upstream
TINYGRAD_SDIST := $(UPSTREAM_CACHE)/tinygrad-0.14.0.tar.gz

.PHONY: deps install check check-layers check-sizes lint format-check test test-cpp test-py test-upstream test-sanitize test-tsan fuzz test-upstream-full random-programs random-models demo bench explore clean format

deps:
	@missing=""; for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else \
	    echo "tinytpu needs Debian packages that are not installed. Run:"; \
	    echo "  sudo apt-get install -y$$missing"; exit 1; \
	  fi; \
	fi
	@$(PYTHON) -c "import importlib.metadata as m, sys; sys.exit(m.version('tinygrad') != '0.14.0')" 2>/dev/null \
	  && $(PYTHON) -c "import pybind11, scikit_build_core, numpy, pytest, hypothesis, matplotlib, PIL, \
	     mkdocs, mkdocstrings, mkdocstrings_handlers.python, sklearn, optuna, distributed, tqdm, ruff, lizard" 2>/dev/null \
	  || $(PYTHON) -m pip install -q $(PY_PACKAGES)

# An explicit build directory keeps rebuilds incremental; a plain `pip install .` builds in a temporary one.
# WITH_TESTS=1 also builds the Catch2 suites there, against the same core libraries as the extension modules
# (each geometry's core is compiled once for both).
install: deps
	$(PYTHON) -m pip install -q --no-build-isolation --no-deps --config-settings=build-dir=$(WHEEL_BUILD) \
	  $(if $(WITH_TESTS),--config-settings=cmake.define.TINYTPU_BUILD_TESTS=ON) .

test-cpp:
	$(MAKE) --no-print-directory install WITH_TESTS=1
	cd $(WHEEL_BUILD) && ctest --output-on-failure -j $(JOBS)

# TINYTPU_VERIFY=1: every launch run in order is ticked as well and compared (docs: Launches run in order).
test-py: install
	TINYTPU_VERIFY=1 $(PYTHON) -m pytest -q tests_py

# tinygrad's own test/test_tiny.py from the 0.14.0 sdist, kept outside the repo, run on TINYTPU.
$(TINYGRAD_SDIST):
	mkdir -p $(UPSTREAM_CACHE)
	$(PYTHON) -m pip download -q --no-binary :all: --no-deps tinygrad==0.14.0 -d $(UPSTREAM_CACHE)

test-upstream: install $(TINYGRAD_SDIST)
	rm -rf build/upstream && mkdir -p build/upstream
	tar -xzf $(TINYGRAD_SDIST) -C build/upstream tinygrad-0.14.0/test/test_tiny.py
	cd build/upstream/tinygrad-0.14.0 && DEV=TINYTPU TINYTPU_VERIFY=1 $(PYTHON) -m pytest -q -p no:cacheprovider test/test_tiny.py
	TINYTPU_VERIFY=1 $(PYTHON) -m pytest -q -p no:cacheprovider tests_upstream/test_run.py

# tinygrad's test/backend and test/models from a tinygrad checkout (slow tests included), each file in its own process,
# against the expected failures and skips kept in tests_upstream/expected.tsv. Hours long, so not part of `make test`.
test-upstream-full: install
	@test -d "$(TINYGRAD_TESTS)/test/backend" || { echo "usage: make test-upstream-full TINYGRAD_TESTS=<tinygrad source checkout>"; exit 2; }
	@$(PYTHON) -c "import torch" 2>/dev/null || $(PYTHON) -m pip install -q torch==2.13.0
	$(PYTHON) tests_upstream/run.py $(TINYGRAD_TESTS) -j $(JOBS)

# Random differential programs, each in its own process (make test runs seeds 0-199): a long local run.
COUNT ?= 5000
SEED ?= 0
random-programs: install
	$(PYTHON) harness/random_programs.py --count $(COUNT) --seed $(SEED) --jobs $(JOBS)

# Random differential models, forward and backward, each in its own process (make test runs a fixed set): the long
# run, COUNT models from SEED (make random-models COUNT=2000), a line per model, every result in build/random_models.json.
random-models: install
	$(PYTHON) harness/random_models.py --count $(COUNT) --seed $(SEED) --jobs $(JOBS) --progress --json build/random_models.json

# Sanitizer builds, each in its own directory. test-sanitize: the Catch2 suite and the Python core tests
# (SANITIZE_PY_TESTS) against an ASan+UBSan build of the extension, imported in place of the installed one;
# both built in one directory on one sanitized core library.
ASAN_BUILD := build/asan
# -O1: half the compile time of -O2 under the sanitizers, and the suite runs as fast.
SANITIZE := -DTINYTPU_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1"
SANITIZE_PY_TESTS ?= tests_py/test_core.py tests_py/test_runtime.py
SANITIZE_ENV := LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)" \
  ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 PYTHONPATH=$(CURDIR)/$(ASAN_BUILD)/pkg

# The sanitized builds are of the reference geometry: the wider cores are the same sources with another
# TINYTPU_ROWS, tested unsanitized by test-cpp and test-py. The sanitized package takes the installed ones.
test-sanitize: install
	cmake -S . -B $(ASAN_BUILD) $(SANITIZE) -DTINYTPU_BUILD_WIDE=OFF \
	  -DPython_EXECUTABLE=$$(command -v $(PYTHON)) -Dpybind11_DIR=$$($(PYTHON) -m pybind11 --cmakedir) >/dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS)
	rm -rf $(ASAN_BUILD)/pkg && mkdir -p $(ASAN_BUILD)/pkg && cp -r python/tinytpu $(ASAN_BUILD)/pkg/
	cp $(ASAN_BUILD)/_core.*.so $(ASAN_BUILD)/pkg/tinytpu/
	cp $$($(PYTHON) -c "import importlib.util as u; print(u.find_spec('tinytpu').submodule_search_locations[0])")/_core[0-9]*.so \
	  $(ASAN_BUILD)/pkg/tinytpu/
	$(SANITIZE_ENV) $(PYTHON) -c "import sys, tinytpu._core as c; print('sanitized', c.__file__); \
	  sys.exit('$(ASAN_BUILD)/pkg/' not in c.__file__)"
	$(SANITIZE_ENV) $(PYTHON) -m pytest -q -p no:cacheprovider $(SANITIZE_PY_TESTS)

# libFuzzer targets (clang, ASan+UBSan) on every text front door, two at a time; fails on any finding and
# prints the input's path. FUZZ_SECONDS per target (CI's short mode), or FUZZ_RUNS inputs each (long mode).
FUZZ_BUILD := build/fuzz
FUZZ_SECONDS ?= 30
FUZZ_RUNS ?= 0

fuzz: deps
	cmake -S . -B $(FUZZ_BUILD) $(SANITIZE) -DCMAKE_CXX_COMPILER=clang++ -DTINYTPU_FUZZ=ON \
	  -DTINYTPU_BUILD_TESTS=OFF -DTINYTPU_BUILD_PYTHON=OFF -DTINYTPU_BUILD_WIDE=OFF >/dev/null
	cmake --build $(FUZZ_BUILD) -j $(JOBS)
	$(PYTHON) fuzz/run.py --build $(FUZZ_BUILD) --seconds $(FUZZ_SECONDS) --runs $(FUZZ_RUNS) --jobs $(JOBS)

# What is checked before anything is built: the layering of cpp/ and python/tinytpu (tools/check_layers.py says the
# layers), the sizes of cpp/'s files and functions, the C++ formatting (.clang-format) and the Python linter
# (pyproject.toml's [tool.ruff]) on every file.
check: check-layers check-sizes lint format-check

check-layers:
	$(PYTHON) tools/check_layers.py

# No file of cpp/ over 900 lines, no function over 80 (tools/check_sizes.py).
check-sizes: deps
	$(PYTHON) tools/check_sizes.py

CPP_FILES = cpp/*/*.h cpp/*/*.cc tests_cpp/*.h tests_cpp/*.cc fuzz/*.cc
lint: deps
	$(PYTHON) -m ruff check --no-cache .

format-check: deps
	clang-format --dry-run -Werror $(CPP_FILES)

test: check test-cpp test-py test-upstream test-sanitize test-tsan fuzz docs

# ThreadSanitizer on a call's threads (executor.h RunMode::threads): a thread-sanitized extension of the reference
# geometry, imported in place of the installed one, running the tests whose calls share their launches among two
# threads and the chip's (its cores' calls each on a thread of its own); any race found fails it. The real
# interpreter, not a wrapper script, takes the preloaded runtime. The chip's repeated sharded training and its Ctrl-C
# test (training steps again and again) are left out (minutes under TSan); its other tests shard kernels over the
# cores too, and a random model sharded over two cores runs forward and backward.
TSAN_BUILD := build/tsan
TSAN_PY_TESTS ?= tests_py/test_functional.py tests_py/test_chip.py tests_py/test_random_models.py::test_a_model_sharded_over_two_cores \
  --deselect tests_py/test_chip.py::test_a_sharded_training_step_repeated_gives_the_same_losses_and_from_the_second_the_same_cycles \
  --deselect tests_py/test_chip.py::test_ctrl_c_during_a_sharded_training_step_stops_it_and_the_next_step_is_right
test-tsan: install
	cmake -S . -B $(TSAN_BUILD) -DTINYTPU_SANITIZE=thread -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" \
	  -DTINYTPU_BUILD_WIDE=OFF -DPython_EXECUTABLE=$$(command -v $(PYTHON)) \
	  -Dpybind11_DIR=$$($(PYTHON) -m pybind11 --cmakedir) >/dev/null
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target _core
	rm -rf $(TSAN_BUILD)/pkg && mkdir -p $(TSAN_BUILD)/pkg && cp -r python/tinytpu $(TSAN_BUILD)/pkg/
	cp $(TSAN_BUILD)/_core.*.so $(TSAN_BUILD)/pkg/tinytpu/
	cp $$($(PYTHON) -c "import importlib.util as u; print(u.find_spec('tinytpu').submodule_search_locations[0])")/_core[0-9]*.so \
	  $(TSAN_BUILD)/pkg/tinytpu/
	LD_PRELOAD="$$(gcc -print-file-name=libtsan.so)" TSAN_OPTIONS="halt_on_error=1 report_signal_unsafe=0" \
	  TINYTPU_THREADS=2 PYTHONPATH=$(CURDIR)/$(TSAN_BUILD)/pkg \
	  $$($(PYTHON) -c "import sys; print(sys.executable)") -m pytest -q -p no:cacheprovider $(TSAN_PY_TESTS)

# The docs site (mkdocs.yml, docs/, API pages from python/tinytpu's docstrings) into build/site. --strict: a broken
# link, a missing image or a docstring that does not render fails it.
.PHONY: docs
docs: deps
	$(PYTHON) -m mkdocs build --strict -d build/site

demo: install
	$(PYTHON) -m tinytpu demo

bench: install
	$(PYTHON) bench/benchmark.py
	$(PYTHON) bench/plot.py

# The design-space search over TensorCore variants: its table, and docs/explore.png with the data beside it.
explore: install
	$(PYTHON) -m tinytpu explore --out docs

format:
	clang-format -i $(CPP_FILES)

clean:
	rm -rf build
