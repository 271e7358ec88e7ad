#!/usr/bin/env bash
# Fragment search with the emitter, then launch-configuration tuning, per task (docs/search.md);
# prints each task's speedup of the best kernel over the best-of-1 (the emitter's default fusion).
#   bash scripts/fragment-search.sh OUT_DIR [DEVICE] [TASK.py...]
#   (DEVICE: cuda by default; TASKs: examples/tasks/level2/*.py by default)
# Env: FRAGMENTS (--fragment-budget, 16), TUNE (--tune-budget, 10), FRAGMENT_TIMEOUT (s per task, 600).
# The summary, one line per task, goes to stdout and to OUT_DIR/speedups.txt.
set -euo pipefail
out=${1:?usage: fragment-search.sh OUT_DIR [DEVICE] [TASK.py...]}
device=${2:-cuda}
shift $(($# < 2 ? $# : 2))
tasks=("$@")
[ ${#tasks[@]} -eq 0 ] && tasks=(examples/tasks/level2/*.py)
mkdir -p "$out"
summary="$out/speedups.txt"
# speedup_over_first: from the side-by-side reruns (--confirm-rounds); searched: the search's own timings
printf 'task\tspeedup_over_first\tsearched\tbest\tcandidates\tnote\n' >"$summary"
for task in "${tasks[@]}"; do
  name=$(basename "$task" .py)
  status=0
  timeout "${FRAGMENT_TIMEOUT:-600}" tritium search --task "$task" --generator emitter --budget 1 \
    --fragment-budget "${FRAGMENTS:-16}" --tune-budget "${TUNE:-10}" --device "$device" \
    --out "$out/$name" >"$out/$name.out" 2>"$out/$name.log" || status=$?
  python3 - "$name" "$status" "$out/$name" >>"$summary" <<'PY'
import json, pathlib, sys
name, status, where = sys.argv[1], int(sys.argv[2]), pathlib.Path(sys.argv[3])
result = json.loads((where / "result.json").read_text()) if (where / "result.json").exists() else None
if result is None:
    print(f"{name}\t-\t-\t-\t0\t{'timed out' if status == 124 else f'exit {status}'}, no result.json")
    sys.exit()
log = [json.loads(line) for line in (where / "search.jsonl").read_text().splitlines()]
skipped = next((line["skipped"] for line in log if line.get("stage") == "fragments" and "skipped" in line), "")
best = result["best"]
speedup = result.get("speedup_over_first")
searched = result.get("search_speedup_over_first", speedup)
stage = result["tried"][best]["stage"] if best is not None else "none correct"
x = lambda value: f"{value:.3f}x" if value else "-"
print(f"{name}\t{x(speedup)}\t{x(searched)}\t{stage}\t{len(result['tried'])}\t{skipped[:160]}")
PY
done
if command -v column >/dev/null; then column -t -s $'\t' "$summary"; else cat "$summary"; fi
