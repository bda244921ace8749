# The README's two commands: `make demo` and `make test`. Each installs what is missing first.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
BUILD := build/dev
APT_PACKAGES := llvm-16-dev libzstd-dev libeigen3-dev libdlpack-dev libdnnl-dev libfarmhash-dev libhighwayhash-dev libgtest-dev cmake ninja-build g++ ccache clang-format-16 graphviz openmpi-bin libopenmpi-dev
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test build deps venv bench lint format clean wheel wheel-check

demo: build
	$(VPY) benchmarks/demo.py

test: build
	cd $(BUILD) && ctest --output-on-failure -j2
	$(VPY) -m pytest -q tests/python

bench: build
	for f in benchmarks/eager_ops.py benchmarks/dispatch.py; do [ -f $$f ] && $(VPY) $$f; done

# Self-contained wheels (tools/build_wheel.sh): scikit-build-core builds them from the committed
# tree in build/wheel (never build/dev), auditwheel vendors their native libraries; the repaired
# wheels land in build/wheel/dist. WHEEL_PYTHONS picks the interpreters (default: .venv's and
# python3.12), WHEEL_JOBS the parallel compiles (default 1, at nice 19).
WHEEL_PYTHONS ?=
WHEEL_JOBS ?= 1
wheel: build/.deps-stamp
	JOBS=$(WHEEL_JOBS) tools/build_wheel.sh $(WHEEL_PYTHONS)

# Each wheel installed into a fresh virtualenv and run from outside the tree (tests/wheel).
# QEMU's user-mode emulation runs a wheel on older CPUs (tests/wheel: no AVX, no FMA).
wheel-check: wheel $(VENV)/.stamp
	@command -v qemu-x86_64 >/dev/null || $(SUDO) apt-get install -y -qq qemu-user
	$(VPY) -m pytest -q tests/wheel

# System packages: installed with apt when missing; elsewhere we name what is needed.
deps: build/.deps-stamp
build/.deps-stamp:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if command -v apt-get >/dev/null; then \
	    echo "installing:$$missing"; $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq $$missing; \
	  else echo "Please install (Debian names):$$missing"; exit 1; fi; \
	fi
	@mkdir -p build && touch $@

# The virtualenv holds the package's Python dependencies and its extras; the package itself
# is the in-tree build, put on the venv's path with a .pth file (an editable install).
venv: $(VENV)/.stamp
$(VENV)/.stamp: pyproject.toml build/.deps-stamp
	[ -x $(VPY) ] || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q numpy ml_dtypes scipy pytest pybind11 scikit-build-core ruff onnx onnxruntime graphviz nbclient ipykernel nbformat nbconvert mpi4py pillow
	$(VPY) -c "import site,os; open(os.path.join(site.getsitepackages()[0],'jitflow-dev.pth'),'w').write(os.path.abspath('python')+'\n')"
	touch $@

build: $(VENV)/.stamp
	@[ -f $(BUILD)/build.ninja ] || cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release \
	  -DPython_EXECUTABLE=$(abspath $(VPY)) -DJITFLOW_BUILD_TESTS=ON
	cmake --build $(BUILD) -j2

# Lint: ruff on the Python, and clang-format (the LLVM 16 one, pinned so its output does not
# drift with the distribution's default) on the C++ without rewriting it.
CPP_SOURCES = $(shell git ls-files 'cpp/*.cc' 'cpp/*.h' 'tests/cpp/*.cc' 'tests/cpp/*.h')
lint: venv
	$(VENV)/bin/ruff check python tests benchmarks tools examples
	@clang-format-16 --dry-run --Werror $(CPP_SOURCES) && echo "clang-format-16: $(words $(CPP_SOURCES)) C++ files clean"

format: venv
	clang-format-16 -i $(CPP_SOURCES)

clean:
	rm -rf build python/jitflow/_C*.so
