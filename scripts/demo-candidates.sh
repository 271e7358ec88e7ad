#!/usr/bin/env bash
# The demo's batch (JSONL on stdout): every example solution, plus runtime cheat fixtures against
# the ReLU task, so `make demo` shows the engine's table with each kind of verdict.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 - <<'PY'
import json, pathlib
solutions = pathlib.Path("examples/solutions")
for path in sorted(solutions.rglob("*.py")):
    print(json.dumps({"id": str(path), "task_id": str(path.relative_to(solutions).with_suffix("")), "code": path.read_text()}))
for name in ("wrong_kernel", "decoy_kernel", "input_mutation", "cache_second_call", "timed_call_detect", "segfault",
             "network_connect"):
    path = pathlib.Path("tests/fixtures/runtime") / f"{name}.py"
    print(json.dumps({"id": str(path), "task_id": "level1/01_relu", "code": path.read_text()}))
PY
