"""Rollout throughput: continuous batching (transformers' generate_batch) against static batches
(generate), side by side on the same prompts, seeds and model, at RL batch sizes.

    python python/benchmarks/rollout_bench.py [--model DIR] [--sequences 64,256,512] [--json F]
        [--generators 'generate,compiled*2,continuous[use_cuda_graph=false;max_batch_tokens=1024]']
        [--profile compiled]

A generator's `*N` makes N calls per batch size (compiled: the first compiles, the next show the
steady state); `[key=value;...]` gives "continuous" its ContinuousBatchingConfig fields (and
attn_implementation) in place of tritium.train.rollout.CONTINUOUS, and any generator `dtype=NAME`:
the policy cast to that dtype for its calls alone ('generate,compiled[dtype=bfloat16]*2' sets the
bfloat16 compiled path against float32 `generate`, the baseline, in one run); "compiled" also takes
defer_stop_check and compile_mode ('compiled[compile_mode=max-autotune]*2': torch.compile's kernel
tuning for the decode step, tritium.train.rollout.COMPILE_MODES).

The model is a transformers directory, or by default SmolLM2-135M's architecture (its Llama
config) with random weights: the machines that run this reach no model hub, and the cost of a
decode step depends on the shapes, not on the weights. A random model would almost never sample
its one EOS, so its output layer gives the EOS the chance `--stop-share` at every token
(StopChance), which gives completions the spread of lengths that real rollouts have (mean
about 1/stop-share tokens, capped at --max-new-tokens). Prompts are Tritium's kernel prompts of the
example tasks, `--group` samples each, as RL draws them. Per batch size it prints generated
tokens/s of each path, the ratio, and the completions' mean length and share stopped by a stop
token under each (they should sample alike); greedy completions of a few prompts are compared
token for token.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import pathlib
import statistics
import sys
import time

import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

from tritium.train import models  # noqa: E402
from tritium.train.rollout import completion_ids  # noqa: E402

# SmolLM2-135M's config.json (the architecture of configs/h200-smollm2.toml's base model).
SMOLLM2_135M = {
    "vocab_size": 49152,
    "hidden_size": 576,
    "intermediate_size": 1536,
    "num_hidden_layers": 30,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "max_position_embeddings": 8192,
    "rope_theta": 100000.0,
    "rms_norm_eps": 1e-5,
    "tie_word_embeddings": True,
}


def kernel_prompts(path: str | None) -> list[str]:
    """The example tasks' kernel prompts; from a JSON list in `path` where given (written by
    --write-prompts, so that a machine without the built extension can run this)."""
    if path:
        return json.loads(pathlib.Path(path).read_text())
    import tritium

    return [tritium.kernel_prompt(p.read_text()) for p in sorted((ROOT / "examples" / "tasks").rglob("*.py"))]


def load(args):
    prompts = kernel_prompts(args.prompts)
    dtype = getattr(torch, args.dtype)
    if args.model:
        model, tokenizer = models.load(args.model, dtype=dtype)
        encoded = [tokenizer(p)["input_ids"] for p in prompts]
        return model, encoded, tokenizer.eos_token_id, tokenizer.pad_token_id, "model " + args.model
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = models.train_tokenizer(prompts, vocab_size=4096)
    encoded = [tokenizer(p)["input_ids"] for p in prompts]
    torch.manual_seed(0)
    config = LlamaConfig(pad_token_id=0, bos_token_id=1, eos_token_id=2, **SMOLLM2_135M)
    model = LlamaForCausalLM(config).to(dtype)
    eos = SMOLLM2_135M["vocab_size"] - 1  # an id the prompts never use
    model.stop_chance = StopChance(model, eos, args.stop_share)
    what = f"SmolLM2-135M architecture, random weights, one EOS id of chance {args.stop_share:.4f} a token"
    return model, encoded, eos, 0, what


class StopChance:
    """A hook on the output layer that sets the logit of `eos`, the vocabulary's last id, so that
    sampling at temperature 1 draws it with probability `share` at every position: completions end as
    real rollouts do, with one stop id. (A set of stop ids instead made transformers' stop criterion
    run torch.isin over them, whose sorting path waits for the device twice a step: a cost real
    rollouts, with one EOS, do not pay.) Part of the forward every generator runs, compiled too.
    Greedy decoding would pick that EOS first (its logit is near the log-sum of all the others), so
    the greedy comparison turns it off (`active`)."""

    def __init__(self, model, eos: int, share: float):
        if eos != model.lm_head.out_features - 1:
            raise ValueError(f"StopChance: the EOS must be the vocabulary's last id, not {eos}")
        self.eos, self.shift, self.active = eos, math.log(share / (1 - share)), True
        model.lm_head.register_forward_hook(self)

    def __call__(self, module, inputs, logits):
        if not self.active:
            return logits
        others = logits[..., : self.eos].float().logsumexp(dim=-1, keepdim=True)
        return torch.cat((logits[..., : self.eos], (others + self.shift).to(logits.dtype)), dim=-1)


def save_model(where: str, prompts: list[str]) -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = models.train_tokenizer(prompts, vocab_size=4096)
    torch.manual_seed(0)
    shape = {**SMOLLM2_135M, "vocab_size": len(tokenizer)}
    LlamaForCausalLM(
        LlamaConfig(
            pad_token_id=tokenizer.pad_token_id,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            **shape,
        )
    ).save_pretrained(where)
    tokenizer.save_pretrained(where)


def parse_generator(spec: str) -> tuple[str, dict | None]:
    """ "continuous[use_cuda_graph=true;max_batch_tokens=1024]": the generator's name and its options
    (values read as JSON where they parse, else as strings); a plain name has none."""
    name, _, rest = calls(spec)[0].partition("[")
    if not rest:
        return name, None
    options = {}
    for item in filter(None, rest.removesuffix("]").split(";")):
        key, _, value = item.partition("=")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return name, options


def calls(spec: str) -> tuple[str, int]:
    """ "compiled*2": the spec and how many calls it makes per batch size (one where not given)."""
    head, star, count = spec.rpartition("*")
    return (head, int(count)) if star and count.isdigit() else (spec, 1)


def split_generators(text: str) -> list[str]:
    """Comma-separated generator specs; commas inside [...] belong to the spec."""
    specs, depth, current = [], 0, ""
    for char in text:
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            specs.append(current)
            current = ""
        else:
            current += char
    return specs + [current] if current else specs


def batch_prompts(encoded: list, sequences: int, group: int) -> list:
    """The prompts whose `group` samples each make about `sequences` rows, cycling through `encoded`."""
    return [encoded[i % len(encoded)] for i in range(max(1, sequences // group))]


def split_dtype(options: dict | None) -> tuple[str | None, dict | None]:
    """A spec's `dtype` option (the policy's dtype for that generator alone, e.g. bfloat16 against a
    float32 baseline) apart from the options the generator itself takes."""
    if not options or "dtype" not in options:
        return None, options
    rest = {k: v for k, v in options.items() if k != "dtype"}
    return options["dtype"], rest or None


class Policies:
    """The model in each dtype a generator asks for, cast once from the loaded one."""

    def __init__(self, model):
        self.loaded, self.cast = model, {}

    def __call__(self, dtype: str | None):
        if dtype is None:
            return self.loaded
        if dtype not in self.cast:
            self.cast[dtype] = copy.deepcopy(self.loaded).to(getattr(torch, dtype))
        return self.cast[dtype]


def run(policies, prompts, group, max_new_tokens, eos, pad, generator, seed, temperature=1.0):
    name, options = parse_generator(generator)
    dtype, options = split_dtype(options)
    model = policies(dtype)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    torch.manual_seed(seed)
    start = time.perf_counter()
    rows = completion_ids(model, prompts, group, max_new_tokens, temperature, 1.0, eos, pad, name, options=options)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    stops = set(eos) if isinstance(eos, list) else {eos}
    lengths = [len(r) for r in rows]
    return {
        "seconds": seconds,
        "tokens": sum(lengths),
        "tokens_per_s": sum(lengths) / seconds,
        "mean_length": statistics.mean(lengths),
        "stopped_share": sum(bool(r) and r[-1] in stops for r in rows) / len(rows),
    }, rows


def profile(policies, prompts, args, eos, pad, seed: int) -> dict:
    """One call of --profile's generator under torch.profiler: whether a decode step waits for the
    host (the device busy for a small share of the wall) or for its kernels, and which ones."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as profiled

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    with profiled(activities=activities) as prof:
        r, rows = run(policies, prompts, args.group, args.max_new_tokens, eos, pad, args.profile, seed)
    events = prof.key_averages()
    device_us = sum(e.self_device_time_total for e in events if e.device_type.name == "CUDA")
    steps = max(map(len, rows))  # decode steps of the call (a static batch runs to its longest)
    busy = device_us / 1e6 / r["seconds"]

    def top(key: str, count: int) -> list[dict]:
        chosen = sorted(events, key=lambda e: getattr(e, key), reverse=True)[:count]
        return [{"name": e.key[:80], "us": getattr(e, key), "calls": e.count} for e in chosen]

    kernels, host = top("self_device_time_total", 15), top("self_cpu_time_total", 12)
    print(
        f"profile, {args.profile} at {len(rows)} sequences: {r['seconds']:.1f} s for {steps} decode steps "
        f"({r['seconds'] / steps * 1000:.2f} ms a step); the device busy {busy:.0%} of it",
        flush=True,
    )
    tables = [("kernels, by device time", kernels)] if device_us else []  # none on the CPU
    for title, rows_ in tables + [("host operations, by their own CPU time", host)]:
        print(f"  {title}:")
        for e in rows_:
            print(f"    {e['us'] / 1000 / steps:8.3f} ms a step  {e['calls']:7} calls  {e['name']}", flush=True)
    return {"call": r, "steps": steps, "device_busy": busy, "kernels": kernels, "host": host}


def _call_ms(fn, *args, repeats: int = 50, **kwargs) -> float:
    """Milliseconds a call of fn(*args, **kwargs) on the GPU (CUDA events around `repeats` calls, after one)."""
    fn(*args, **kwargs)
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    for _ in range(repeats):
        fn(*args, **kwargs)
    end.record()
    torch.cuda.synchronize()
    return begin.elapsed_time(end) / repeats


def attention_check(args) -> list[dict]:
    """One layer's decode-step attention at RL's shapes (SmolLM2's 9 query heads over 3 key/value
    heads, --dtype), GQA_DECODE's SDPA against TRITON_DECODE's kernel, over static caches of each
    length in --attention-check, the rows' prompts left-padded by up to a quarter of it and their
    current position at three quarters: their largest difference and milliseconds a call; on a GPU
    also the kernel under each launch of --attention-launches (keys a block, warps, stages)."""
    from tritium.train import decode_attention, rollout

    dtype, device, rows = getattr(torch, args.dtype), args.device, max(args.sequences)
    layer = argparse.Namespace(num_key_value_groups=3, is_causal=True, training=False)
    attends = {
        rollout.GQA_DECODE: rollout._gqa_decode_attention,
        rollout.TRITON_DECODE: rollout._triton_decode_attention,
    }
    results = []
    for keys in args.attention_check:
        torch.manual_seed(keys)
        query = torch.randn(rows, 9, 1, 64, device=device, dtype=dtype)
        key, value = (torch.randn(rows, 3, keys, 64, device=device, dtype=dtype) for _ in range(2))
        index = torch.arange(keys, device=device)
        pad = torch.randint(0, keys // 4, (rows, 1), device=device)
        mask = ((index >= pad) & (index < keys // 2 + keys // 4)).view(rows, 1, 1, keys)
        row = {"keys": keys, "sequences": rows}
        outs = {name: attend(layer, query, key, value, mask, scaling=0.125)[0] for name, attend in attends.items()}
        row["max_difference"] = (
            (outs[rollout.GQA_DECODE].float() - outs[rollout.TRITON_DECODE].float()).abs().max().item()
        )
        if device == "cuda":
            tensors = (query, key, value, mask)
            for name, attend in attends.items():
                row[f"{name}_ms"] = _call_ms(attend, layer, *tensors, scaling=0.125)
            row["launches_ms"] = {
                f"{block}/{warps}/{stages}": _call_ms(
                    decode_attention.decode_attention, *tensors, 0.125, block=block, warps=warps, stages=stages
                )
                for block, warps, stages in args.attention_launches
            }
        results.append(row)
        print(f"attention, {keys} cache slots x {rows} sequences: {row}", flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="a transformers model directory (default: SmolLM2-135M's shape, random)")
    parser.add_argument("--sequences", type=lambda s: [int(n) for n in s.split(",")], default=[64, 256, 512])
    parser.add_argument("--group", type=int, default=8, help="samples per prompt")
    parser.add_argument("--max-new-tokens", type=int, default=512)
    parser.add_argument("--stop-share", type=float, default=1 / 300, help="random model: the EOS's chance a token")
    parser.add_argument("--dtype", default="float32", help="the policy's dtype (RL trains in float32)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--greedy-prompts", type=int, default=8)
    parser.add_argument(
        "--generators",
        type=split_generators,
        default=["generate", "compiled", "continuous"],
        help="comma-separated; the first is the baseline; continuous[key=value;...] passes "
        "ContinuousBatchingConfig fields (and attn_implementation) to that call, [dtype=NAME] any generator "
        "its policy's dtype; NAME*N makes N calls per batch size (compiled: the first one compiles, the next "
        "ones show the steady state)",
    )
    parser.add_argument(
        "--greedy-generators",
        type=split_generators,
        help="the generators the greedy check compares, the first the reference (default: --generators)",
    )
    parser.add_argument("--budget", type=float, help="seconds: skip the calls that would start after it")
    parser.add_argument("--prompts", help="the kernel prompts as a JSON list (default: made from examples/tasks)")
    parser.add_argument("--write-prompts", metavar="FILE", help="only write the kernel prompts to FILE")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument(
        "--attention-check",
        type=lambda s: [int(n) for n in s.split(",")],
        help="static cache lengths: first time one layer's decode attention, SDPA's against the Triton kernel",
    )
    parser.add_argument(
        "--attention-launches",
        type=lambda s: [tuple(int(n) for n in item.split("/")) for item in s.split(",")],
        default=[(64, 4, 3), (32, 4, 3), (128, 4, 3), (64, 2, 3), (64, 8, 3), (64, 4, 2), (64, 4, 4)],
        help="--attention-check's launches of the kernel to time, BLOCK/WARPS/STAGES each",
    )
    parser.add_argument(
        "--profile",
        metavar="GENERATOR",
        help="after the runs, one more call of GENERATOR at the largest --sequences under torch.profiler: "
        "the device's busy share of the call and its costliest kernels and host operations",
    )
    parser.add_argument(
        "--save-model",
        metavar="DIR",
        help="only write the random model (its vocabulary the prompts' tokenizer's) and that "
        "tokenizer to DIR, as a model directory for `python -m tritium.train.rl`",
    )
    args = parser.parse_args()
    if args.write_prompts:
        pathlib.Path(args.write_prompts).write_text(json.dumps(kernel_prompts(None)))
        return
    if args.save_model:
        save_model(args.save_model, kernel_prompts(args.prompts))
        return

    model, encoded, eos, pad, what = load(args)
    policies = Policies(model.to(args.device))
    print(
        f"{what}; {args.dtype} on {args.device}; {len(encoded)} prompts of {min(map(len, encoded))}-"
        f"{max(map(len, encoded))} tokens; {args.group} samples each; up to {args.max_new_tokens} new tokens",
        flush=True,
    )
    results = {"what": what, "dtype": args.dtype, "device": args.device, "rows": [], "greedy": {}}
    if args.attention_check:
        results["attention"] = attention_check(args)
    for generator in args.generators:  # CUDA context, kernels, allocator: not the measured calls'
        if parse_generator(generator)[0] == "compiled":
            continue  # its first measured call shows what a compile costs
        began = time.perf_counter()
        run(policies, encoded[:2], 2, 8, eos, pad, generator, 0)
        print(f"{generator}: first call {time.perf_counter() - began:.1f} s", flush=True)

    def save():
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps(results, indent=2))

    baseline = args.generators[0]
    began = time.perf_counter()
    for n in args.sequences:
        prompts = batch_prompts(encoded, n, args.group)
        row = {"sequences": len(prompts) * args.group}
        results["rows"].append(row)
        for generator in args.generators:
            for call in range(calls(generator)[1]):
                if args.budget and time.perf_counter() - began > args.budget:
                    print(f"{row['sequences']:4} sequences, {generator}: skipped (past --budget)", flush=True)
                    continue
                r, _ = run(policies, prompts, args.group, args.max_new_tokens, eos, pad, generator, seed=n)
                r["call"] = call + 1
                row.setdefault(generator, []).append(r)
                # Against the baseline's last call (its steady state where it compiles)
                r["ratio"] = r["tokens_per_s"] / row[baseline][-1]["tokens_per_s"] if baseline in row else None
                save()
                ratio = f"{r['ratio']:.2f}x {baseline}" if r["ratio"] else "no baseline"
                print(
                    f"{row['sequences']:4} sequences, {generator} (call {call + 1}): {r['tokens_per_s']:7.0f} tok/s "
                    f"({r['seconds']:6.1f} s, mean {r['mean_length']:.0f} tokens, {r['stopped_share']:.0%} stopped):"
                    f" {ratio}",
                    flush=True,
                )

    if args.profile:
        n = max(args.sequences)
        prompts = batch_prompts(encoded, n, args.group)
        results["profile"] = profile(policies, prompts, args, eos, pad, seed=n)
        save()

    prompts = encoded[: args.greedy_prompts]
    compared = args.greedy_generators or args.generators
    for policy in (policies.loaded, *policies.cast.values()):
        if hasattr(policy, "stop_chance"):
            policy.stop_chance.active = False  # 64 greedy tokens each, compared token for token
    greedy = {g: run(policies, prompts, 1, 64, eos, pad, g, 0, temperature=0.0)[1] for g in compared if prompts}
    reference = compared[0]
    for generator, rows in greedy.items():
        same = sum(a == b for a, b in zip(greedy[reference], rows))
        prefix = statistics.mean(
            next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            for a, b in zip(greedy[reference], rows)
        )
        results["greedy"][generator] = {"prompts": len(prompts), "identical": same, "mean_common_prefix": prefix}
        print(
            f"greedy, 64 tokens: {generator} decodes {same} of {len(prompts)} completions as {reference} does "
            f"(mean common prefix {prefix:.1f} tokens)",
            flush=True,
        )
    save()


if __name__ == "__main__":
    main()
