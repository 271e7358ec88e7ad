#!/usr/bin/env bash
# On a GPU machine without network (docs/gpu.md): build Tritium from .deps, run the GPU tests and
# the engine benchmarks in one call. Results go to $OUT (or ./gpu-results).
#   bash scripts/gpu-check.sh [tests|repeatability|throughput|cache|demo]...   (default: the first four)
# demo: the demo batch (scripts/demo-candidates.sh) timed on the GPU, verdicts in $OUT/h200-demo.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-results}"
mkdir -p "$OUT"
PREFIX=$(bash scripts/unpack-debs.sh)
python3 -m pip install -q --no-build-isolation --no-deps -Cbuild-dir=build/gpu \
  -Ccmake.define.CMAKE_PREFIX_PATH="$PREFIX" -e . >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
export TRITON_INTERPRET=0
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(tests repeatability throughput cache)
for step in "${steps[@]}"; do
  echo "== $step"
  case "$step" in
    demo) bash scripts/demo-candidates.sh > "$OUT/demo-candidates.jsonl"
          tritium eval --tasks examples/tasks --candidates "$OUT/demo-candidates.jsonl" --device cuda --seed 1 \
            --out "$OUT/h200-demo.jsonl" 2>&1 | tee "$OUT/demo.log" | tail -40 || true ;;
    tests) python3 -m pytest -q -p no:cacheprovider python/tests/test_engine_gpu.py \
             2>&1 | tee "$OUT/tests.log" | tail -15 || true ;;  # failures are reported; later steps still run
    *) python3 python/benchmarks/engine_bench.py "$step" --json "$OUT/$step.json" 2>&1 | tee "$OUT/$step.log" ;;
  esac
done
