# The two commands of the README: `make demo` (the main job) and `make test` (every test).
# Each does its own set-up first (scripts/setup.sh: apt packages when missing, .venv, build).
VENV ?= .venv
BUILD_DIR ?= build/py
PY := $(VENV)/bin/python
export VENV BUILD_DIR
# ctest drives the runner with the venv's Python.
export TRITIUM_PYTHON := $(abspath $(PY))

.PHONY: setup demo demo-examples test lint test-cpp test-python integrations report-check bench fuzz clean

setup:
	@bash scripts/setup.sh

# The tiny end-to-end run (configs/tiny-cpu.toml): synthesize, SFT, RL, evaluate on held-out tasks.
demo: setup
	$(VENV)/bin/tritium train --config configs/tiny-cpu.toml
	@sed -n '/^## Overall/,/^## Error/p' runs/tiny-cpu/report/report.md | head -n -1
	@$(VENV)/bin/python -c "import json; from tritium.train.rl import signal_summary; \
	  from tritium.train.evaluate import stage_change; \
	  print(signal_summary(json.load(open('runs/tiny-cpu/rl/rl_history.json')))); \
	  print(stage_change('runs/tiny-cpu/eval/sft/verdicts.jsonl', 'runs/tiny-cpu/eval/rl/verdicts.jsonl'))"
	@echo "full report: runs/tiny-cpu/report/report.html"

# The example tasks' references checked, then the example solutions and a few cheating kernels
# judged by the sandboxed engine.
demo-examples: setup
	$(VENV)/bin/tritium tasks examples/tasks --check
	@bash scripts/demo-candidates.sh > $(BUILD_DIR)/demo-candidates.jsonl
	-$(VENV)/bin/tritium eval --tasks examples/tasks --candidates $(BUILD_DIR)/demo-candidates.jsonl --no-static --timeout 30

test: setup
	$(MAKE) --no-print-directory lint test-cpp test-python integrations

# The house style, checked: clang-format (.clang-format) on the C++, ruff (pyproject.toml) on the
# Python; both pinned in requirements/dev.txt. `clang-format -i` and `ruff format` fix what they report.
lint: setup
	$(VENV)/bin/clang-format --dry-run -Werror $$(find cpp -name '*.cc' -o -name '*.h')
	$(VENV)/bin/ruff check python
	$(VENV)/bin/ruff format --check python

test-cpp:
	cd $(BUILD_DIR) && $(abspath $(VENV))/bin/ctest --output-on-failure -j2

test-python:
	$(PY) -m pytest -q python/tests

# Real TRL (two GRPOTrainer steps) and verl's own reward loader on docs/integrations.md's recipes.
integrations: setup
	$(PY) -m pip install -q -c requirements/dev.txt -r requirements/integrations.txt
	$(PY) -m pip install -q --no-deps verl==0.9.1
	$(PY) -m pytest -q python/tests/test_integrations.py -k real

# The report's HTML in a real browser: Debian's headless Chromium, installed when missing.
report-check: setup
	@command -v chromium >/dev/null || command -v chromium-headless-shell >/dev/null || apt-get install -y -qq chromium
	$(PY) -m pytest -q python/tests/test_report.py

bench: setup
	@for b in $(BUILD_DIR)/cpp/bench/bench_*; do echo "== $$b"; $$b; done
	@command -v wrk >/dev/null || apt-get install -y -qq wrk
	@echo "== python/benchmarks/serve_bench.py"; $(PY) python/benchmarks/serve_bench.py

clean:
	rm -rf build

# The parser's libFuzzer target under ASan+UBSan (needs clang-14 and libclang-rt-14-dev).
# FUZZ_SECONDS bounds the run; the corpus starts from the examples and the stdlib.
FUZZ_SECONDS ?= 300
fuzz:
	@command -v clang++-14 >/dev/null || apt-get install -y -qq clang-14 libclang-rt-14-dev
	mkdir -p build/fuzz/corpus build/fuzz/crashes
	clang++-14 -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -Icpp/include cpp/fuzz/pyast_fuzz.cc cpp/src/pyast/*.cc -o build/fuzz/pyast_fuzz
	cp examples/*/*/*.py build/fuzz/corpus/ 2>/dev/null; \
	  $(PY) -c "import sysconfig,pathlib,shutil;[shutil.copy(p,'build/fuzz/corpus/'+str(i)+'.py') for i,p in enumerate(sorted(pathlib.Path(sysconfig.get_paths()['stdlib']).glob('*.py'))[:200])]"
	build/fuzz/pyast_fuzz -max_total_time=$(FUZZ_SECONDS) -max_len=16384 -timeout=10 \
	  -artifact_prefix=build/fuzz/crashes/ build/fuzz/corpus
