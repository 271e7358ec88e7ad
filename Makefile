# The two commands of the README: `make demo` (the main job) and `make test` (every test).
# Each does its own set-up first (scripts/setup.sh: apt packages when missing, .venv, build).
VENV ?= .venv
BUILD_DIR ?= build/py
PY := $(VENV)/bin/python
export VENV BUILD_DIR
# ctest drives the runner with the venv's Python.
export TRITIUM_PYTHON := $(abspath $(PY))

.PHONY: setup demo test test-cpp test-python bench clean

setup:
	@bash scripts/setup.sh

demo: setup
	$(VENV)/bin/tritium tasks examples/tasks --check

test: setup
	$(MAKE) --no-print-directory test-cpp test-python

test-cpp:
	cd $(BUILD_DIR) && $(abspath $(VENV))/bin/ctest --output-on-failure -j2

test-python:
	$(PY) -m pytest -q python/tests

bench: setup
	@for b in $(BUILD_DIR)/cpp/bench/bench_*; do echo "== $$b"; $$b; done

clean:
	rm -rf build
