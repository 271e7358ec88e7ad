#!/usr/bin/env bash
# On a GPU machine without network (docs/gpu.md): build Tritium from .deps, run the GPU tests and
# the engine benchmarks in one call. Results go to $OUT (or ./gpu-results).
#   bash scripts/gpu-check.sh [tests|repeatability|throughput|contexts|beside|cache|probe|scale|rollouts|update|demo|synth|search|fragments|model|train|ablation|train-parity]...
#   (default: the first four; a benchmark step's extra flags come from <STEP>_ARGS, e.g. PROBE_ARGS)
# scale: the KernelBench-size suite (examples/kernelbench_scale) through the engine and the naive baseline;
#   it exits 1 when a target is missed, which ends the call (SCALE_ARGS="--only-engine" skips the baseline).
# update: python/benchmarks/update_bench.py with UPDATE_ARGS (default: SmolLM2's shape, a group of the mid config;
#   update_micro_batch 0,4,2,1 side by side); its log and JSON in $OUT.
# rollouts: python/benchmarks/rollout_bench.py with ROLLOUTS_ARGS (e.g. "--sequences 256 --generators
#   generate,compiled*2 --profile compiled"); its log and JSON in $OUT.
# demo: the demo batch (scripts/demo-candidates.sh) timed on the GPU, verdicts in $OUT/h200-demo.jsonl.
# synth: a --size gpu sample validated on the GPU, and reference solutions judged there (untimed;
#   the report, with each failed solution's status and message, in $OUT/synth-gpu-solutions.report).
# search: launch-configuration search from the example level-2 solutions and from the emitter's
#   solutions of synthesized fusion tasks; one directory per task under $OUT/search. Then the
#   emitter's fragment search and tuning on each level-2 example (scripts/fragment-search.sh), with
#   each task's speedup over its best-of-1 kernel in $OUT/search/fragments/speedups.txt.
# fragments: that fragment search and tuning alone (nothing else on the GPU: small kernels' timings
#   feel any CPU or GPU work beside them); $OUT/speedups.txt, the searches in $OUT/fragments.tar.gz.
# model: joins the two halves of SmolLM2 that scripts/fetch-model.sh cut (.model/a from an earlier
#   call on the same warm machine, .model/b carried by this one) into runs/models/smollm2, and puts
#   the gguf package (from its wheel) on PYTHONPATH for the steps after it.
# train: $TRAIN_CONFIG (default configs/h200.toml) on every GPU (accelerate); its data stage is
#   skipped when the config's out directory came along with sft.jsonl (carry it: the data stage
#   validates solutions on the CPU), and TRAIN_STAGES (default "sft rl eval") picks the stages then:
#   "sft eval" in one call and "rl eval" in the next, on the same warm machine, split a long run.
#   The log in $OUT/train, reports, histories and verdicts in $OUT/train/run.tar.gz. TRAIN_LIMIT_S
#   (seconds; default none) stops the run in time to pack what the stages it finished wrote; 25 s before
#   it, the config's time_limit_s (unless it sets one) ends RL after its last whole step, saved.
# ablation: python -m tritium.train.ablation on $TRAIN_CONFIG (its data and SFT done: a train call before it on
#   the same warm machine; SFT's eval is made with the arms' if missing), the schemes in ABLATION_REWARDS (default "hrd,blended"; one per
#   call where a call cannot hold both arms), under TRAIN_LIMIT_S; ABLATION_STAGES ("rl" or "eval"; default
#   both) splits an arm over two calls, ABLATION_STEPS sets every arm's RL steps; the arms' logs, histories
#   and verdicts in $OUT/ablation/ablation.tar.gz.
# train-parity: scripts/train-parity.sh on 1 and on all GPUs, with the tiny preset on the SFT data
#   and tasks of $PARITY_RUN (default runs/h200; any run directory a data stage made: carry it).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-results}"
mkdir -p "$OUT"
PREFIX=$(bash scripts/unpack-debs.sh)
python3 -m pip install -q --no-build-isolation --no-deps -Cbuild-dir=build/gpu \
  -Ccmake.define.CMAKE_PREFIX_PATH="$PREFIX" -e . >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
export TRITON_INTERPRET=0
run_dir_of() { python3 -c "import sys,tomllib;print(tomllib.load(open(sys.argv[1],'rb'))['out'])" "$1"; }  # a config's out
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(tests repeatability throughput cache)
for step in "${steps[@]}"; do
  echo "== $step"
  case "$step" in
    demo) bash scripts/demo-candidates.sh > "$OUT/demo-candidates.jsonl"
          tritium eval --tasks examples/tasks --candidates "$OUT/demo-candidates.jsonl" --device cuda --seed 1 \
            --out "$OUT/h200-demo.jsonl" 2>&1 | tee "$OUT/demo.log" | tail -40 || true ;;
    synth) tritium synth --count "${SYNTH_COUNT:-30}" --difficulty 1-8 --size gpu --seed 21 --validate --device cuda \
             --out "$OUT/synth-gpu.jsonl" 2>&1 | tail -5
           tritium synth --count "${SOLUTION_COUNT:-20}" --difficulty 1-3 --ops unary,binary,scalar,reduction,softmax,norm,linalg \
             --size gpu --seed 22 --with-solutions --validate --device cuda --json --timeout 300 \
             --out "$OUT/synth-gpu-solutions.jsonl" 2>&1 | tee "$OUT/synth-gpu-solutions.report" | tail -8 ;;
    search) mkdir -p "$OUT/search"
            for task in examples/tasks/level2/*.py; do
              name=$(basename "$task" .py)
              tritium search --task "$task" --candidate "examples/solutions/level2/$name.py" --tune-budget "${TUNE:-10}" \
                --device cuda --out "$OUT/search/$name" 2>"$OUT/search/$name.log" | tail -2
            done
            tritium synth --count 4 --difficulty 2-3 --ops unary,binary,scalar,linalg --size gpu --seed 23 \
              --with-solutions --out "$OUT/search/synth.jsonl" >/dev/null
            for id in $(python3 -c "import json,sys;[print(json.loads(l)['id']) for l in open(sys.argv[1])]" "$OUT/search/synth.jsonl"); do
              tritium search --task "$id" --tasks "$OUT/search/synth.jsonl" --generator emitter --budget 1 \
                --tune-budget "${TUNE:-10}" --device cuda --out "$OUT/search/$id" 2>"$OUT/search/$id.log" | tail -2
            done
            bash scripts/fragment-search.sh "$OUT/search/fragments" cuda ;;
    fragments) bash scripts/fragment-search.sh "$OUT/fragments" cuda
               cp "$OUT/fragments/speedups.txt" "$OUT/"
               tar czf "$OUT/fragments.tar.gz" -C "$OUT" fragments && rm -rf "$OUT/fragments" ;;
    model) name=$(basename .model/a/*.part0 .part0); mkdir -p runs/models/smollm2  # as fetch-model.sh named it
           cat ".model/a/$name.part0" ".model/b/$name.part1" > "runs/models/smollm2/$name"
           (cd runs/models/smollm2 && sha256sum -c ../../../.model/b/SHA256SUMS)
           python3 -m pip install -q --no-index --no-deps --target .model/site .model/a/gguf-*.whl
           export PYTHONPATH="$PWD/.model/site${PYTHONPATH:+:$PYTHONPATH}" ;;
    train) mkdir -p "$OUT/train"; config="$OUT/train/$(basename "${TRAIN_CONFIG:-configs/h200.toml}")"
           cp "${TRAIN_CONFIG:-configs/h200.toml}" "$config"
           # the run's own limit inside the call's: RL stops after the step that leaves too little of it, saved
           [ -n "${TRAIN_LIMIT_S:-}" ] && ! grep -q "^time_limit_s" "$config" && sed -i "1i time_limit_s = $((TRAIN_LIMIT_S - 25))" "$config"
           run_dir=$(run_dir_of "$config")
           stages=(${TRAIN_STAGES:-sft rl eval}); stages=$(printf '"%s", ' "${stages[@]}")
           [ -f "$run_dir/sft.jsonl" ] && sed -i "s/^stages = .*/stages = [${stages%, }]/" "$config"
           gpus=$(python3 -c "import torch; print(torch.cuda.device_count())")
           multi=(); [ "$gpus" -gt 1 ] && multi=(--multi_gpu)
           # TRAIN_LIMIT_S stops the run in time for the reports of the stages it finished to be copied
           timeout "${TRAIN_LIMIT_S:-0}" accelerate launch "${multi[@]}" --num_processes "$gpus" --num_machines 1 \
             --mixed_precision no --dynamo_backend no -m tritium.train --config "$config" >"$OUT/train/train.log" 2>&1 || true
           grep -E "^(sft|rl|eval|data):" "$OUT/train/train.log" | tail -30
           # reports, histories, verdicts and TensorBoard logs in one file ($OUT brings back 8 at most)
           parts=$(cd "$run_dir" && ls -d eval report rl sft 2>/dev/null || true)
           [ -n "$parts" ] && tar czf "$OUT/train/run.tar.gz" -C "$run_dir" --exclude='checkpoint-*' $parts ;;
    ablation) mkdir -p "$OUT/ablation"; config="${TRAIN_CONFIG:-configs/h200.toml}"
              run_dir=$(run_dir_of "$config")
              timeout "${TRAIN_LIMIT_S:-0}" python3 -m tritium.train.ablation --config "$config" \
                --rewards "${ABLATION_REWARDS:-hrd,blended}" --stages "${ABLATION_STAGES:-rl,eval}" \
                ${ABLATION_STEPS:+--steps "$ABLATION_STEPS"} >"$OUT/ablation/ablation.log" 2>&1 || true
              grep -E "^(ablation|rl|eval):" "$OUT/ablation/ablation.log" | tail -30
              [ -d "$run_dir/ablation" ] && tar czf "$OUT/ablation/ablation.tar.gz" -C "$run_dir" --exclude='checkpoint-*' ablation ;;
    train-parity) gpus=$(python3 -c "import torch; print(torch.cuda.device_count())"); run=${PARITY_RUN:-runs/h200}
                  head -8 "$run/train_tasks.jsonl" > "$OUT/parity-tasks.jsonl"
                  bash scripts/train-parity.sh "$OUT/parity" "$run/sft.jsonl" "$OUT/parity-tasks.jsonl" "$gpus" \
                    2>&1 | tee "$OUT/parity.txt"
                  rm -rf "$OUT"/parity/*/checkpoint-* "$OUT"/parity/*/tensorboard ;;
    update) read -ra extra <<< "${UPDATE_ARGS:-}"
            python3 python/benchmarks/update_bench.py "${extra[@]}" --json "$OUT/update.json" 2>&1 | tee "$OUT/update.log" ;;
    rollouts) read -ra extra <<< "${ROLLOUTS_ARGS:-}"
              python3 python/benchmarks/rollout_bench.py "${extra[@]}" --json "$OUT/rollouts.json" 2>&1 \
                | tee "$OUT/rollouts.log" ;;
    tests) python3 -m pytest -q -p no:cacheprovider python/tests/test_engine_gpu.py python/tests/test_triton_driver.py \
             2>&1 | tee "$OUT/tests.log" | tail -15 || true ;;  # failures are reported; later steps still run
    *) args_var="${step^^}_ARGS"  # e.g. PROBE_ARGS="--runs 3", THROUGHPUT_ARGS="--untimed"
       read -ra extra <<< "${!args_var:-}"
       python3 python/benchmarks/engine_bench.py "$step" "${extra[@]}" --json "$OUT/$step.json" 2>&1 \
         | tee "$OUT/$step.log" ;;
  esac
done
