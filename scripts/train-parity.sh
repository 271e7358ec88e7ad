#!/usr/bin/env bash
# The same few SFT and RL steps on one process and on N (accelerate launch; one per GPU), side by
# side: their per-step losses, and the largest relative difference.
#   bash scripts/train-parity.sh OUT_DIR SFT_JSONL TASKS_JSONL [N]
# (python/tests/test_train_distributed.py checks the same on the CPU, with torchrun.)
set -euo pipefail
out=${1:?usage: train-parity.sh OUT_DIR SFT_JSONL TASKS_JSONL [N]}
sft_data=${2:?}; tasks=${3:?}; n=${4:-2}
mkdir -p "$out"
launch() {  # launch PROCESSES MODULE ARGS...
  local p=$1; shift
  if [ "$p" -eq 1 ]; then python3 -m "$@"; else
    accelerate launch --multi_gpu --num_processes "$p" --num_machines 1 --mixed_precision no --dynamo_backend no -m "$@"
  fi
}
for p in 1 "$n"; do
  launch "$p" tritium.train.sft --data "$sft_data" --out "$out/sft-$p" --steps 5 --batch-size 8 --lr 3e-3 \
    --max-len 1536 --log-every 0 --tensorboard false >"$out/sft-$p.log" 2>&1
  launch "$p" tritium.train.rl --tasks "$tasks" --model "$out/sft-1/checkpoint-5" --out "$out/rl-$p" --steps 2 \
    --prompts-per-step 4 --group-size 4 --max-new-tokens 64 --temperature 1.0 --lr 1e-4 --engine-device cpu \
    --tensorboard false >"$out/rl-$p.log" 2>&1
done
python3 - "$out" "$n" <<'PY'
import json, sys
out, n = sys.argv[1], sys.argv[2]
sft = [json.load(open(f"{out}/sft-{p}/sft_result.json"))["losses"] for p in ("1", n)]
rl = [[r["loss"] for r in json.load(open(f"{out}/rl-{p}/rl_history.json"))] for p in ("1", n)]
rl_status = [[r["statuses"] for r in json.load(open(f"{out}/rl-{p}/rl_history.json"))] for p in ("1", n)]
rel = lambda a, b: max(abs(x - y) / max(abs(x), 1e-12) for x, y in zip(a, b))
print(f"SFT losses, 1 process: {[round(x, 6) for x in sft[0]]}")
print(f"SFT losses, {n} processes: {[round(x, 6) for x in sft[1]]}; largest relative difference {rel(*sft):.2e}")
print(f"RL losses, 1 process: {rl[0]}, statuses {rl_status[0]}")
print(f"RL losses, {n} processes: {rl[1]}, statuses {rl_status[1]}; largest relative difference {rel(*rl):.2e}")
PY
