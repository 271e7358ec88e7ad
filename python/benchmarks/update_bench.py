"""Memory and time of RL's update (tritium.train.rl): a prompt group's rollouts in one forward and
backward pass against `update_micro_batch` rollouts a pass, side by side on the same rollouts, model
and advantages.

    python python/benchmarks/update_bench.py [--model DIR] [--device cuda] [--micro 0,4,2,1]
        [--prompt 900] [--lengths 2176,1100,1044,...] [--repeats 2] [--json F]

The model is a transformers directory, or by default SmolLM2-135M's shape with random weights (the
cost depends on the shapes, not the weights). The group's rollouts have the lengths given, after a
prompt of --prompt tokens; the default is a group of 8 of the mid config (configs/h200-smollm2-mid.toml):
one rollout cut at its max_new_tokens (2,176), the others about the SFT responses' median (1,044).
Each setting runs in a process of its own, so that its peak memory is its own: on CUDA the
allocator's peak allocated and reserved bytes, on the CPU the process's peak resident set. Per
setting it prints the seconds of the old log-probs (no gradient) and of one optimizer step on the
group (forward, backward, AdamW), the peaks, and each one's ratio to the first setting.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import resource
import subprocess
import sys
import time
import types

import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "python" / "benchmarks"))

from rollout_bench import SMOLLM2_135M  # noqa: E402

from tritium.train import models, rl  # noqa: E402

MID_GROUP = "2176,1044,1044,1044,1044,1044,1044,1044"


def build(args, device: torch.device):
    """The model, the pad id and the group's token ids (seeded: every setting gets the same)."""
    if args.model:  # "tiny": the CI's model, trained on a line of code
        model, tokenizer = models.load(args.model, corpus=["def forward(x): return torch.relu(x) + 1.0"])
        vocab, pad = len(tokenizer), tokenizer.pad_token_id
    else:
        from transformers import LlamaConfig, LlamaForCausalLM

        torch.manual_seed(0)
        model = LlamaForCausalLM(LlamaConfig(pad_token_id=0, bos_token_id=1, eos_token_id=2, **SMOLLM2_135M))
        vocab, pad = SMOLLM2_135M["vocab_size"], 0
    generator = torch.Generator().manual_seed(1)
    draw = lambda n: torch.randint(3, vocab, (n,), generator=generator).tolist()  # noqa: E731
    prompt = draw(args.prompt)
    completions = [draw(int(n)) for n in args.lengths.split(",")]
    return model.to(device), pad, prompt, completions


def one(args) -> dict:
    """One setting, in this process: the old log-probs, then `repeats` optimizer steps on the group."""
    from accelerate import Accelerator

    device = torch.device(args.device)
    model, pad, prompt, completions = build(args, device)
    cfg = rl.RLConfig(tasks="", model="", out="", update_micro_batch=args.one)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    began = time.perf_counter()
    group = rl._behaviour(cfg, types.SimpleNamespace(pad_token_id=pad), prompt, completions, model, None, device)
    sync()
    behaviour_s = time.perf_counter() - began
    generator = torch.Generator().manual_seed(2)
    group["adv"] = torch.randn(group["mask"].shape, generator=generator).to(device) * group["mask"]
    accelerator = Accelerator(cpu=device.type == "cpu")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6)
    steps = []
    for _ in range(args.repeats):
        began = time.perf_counter()
        loss = rl._minibatch_step(cfg, accelerator, model, optimizer, [group], 1.0)
        sync()
        steps.append(time.perf_counter() - began)
    out = {
        "micro": args.one,
        "passes": len(rl._slices(group, cfg)),
        "behaviour_s": behaviour_s,
        "update_s": min(steps),  # the first step also allocates AdamW's state
        "loss": float(loss),
    }
    if device.type == "cuda":
        out["peak_allocated_gb"] = torch.cuda.max_memory_allocated() / 2**30
        out["peak_reserved_gb"] = torch.cuda.max_memory_reserved() / 2**30
    else:
        out["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--model", help="a transformers model directory or tiny (default: SmolLM2-135M's shape, random)"
    )
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--micro", default="0,4,2,1", help="update_micro_batch settings; the first is the baseline")
    parser.add_argument("--prompt", type=int, default=900, help="prompt tokens")
    parser.add_argument("--lengths", default=MID_GROUP, help="the group's completion lengths")
    parser.add_argument("--repeats", type=int, default=2, help="optimizer steps timed per setting (the fastest counts)")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a setting's own process
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(one(args)))
        return
    common = ["--device", args.device, "--prompt", str(args.prompt), "--lengths", args.lengths]
    common += ["--repeats", str(args.repeats)] + (["--model", args.model] if args.model else [])
    print(
        f"update of one group: {len(args.lengths.split(','))} rollouts of {args.lengths} tokens after {args.prompt} "
        f"prompt tokens, {args.model or 'SmolLM2-135M shape, random'}, on {args.device}"
    )
    results = []
    for micro in (int(m) for m in args.micro.split(",")):
        done = subprocess.run([sys.executable, __file__, "--one", str(micro), *common], capture_output=True, text=True)
        if done.returncode:
            sys.exit(f"update_micro_batch {micro} failed:\n{done.stderr[-3000:]}")
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
        base, r = results[0], results[-1]
        peaks = [k for k in ("peak_allocated_gb", "peak_reserved_gb", "peak_rss_gb") if k in r]
        print(
            f"update_micro_batch {micro} ({r['passes']} passes): old log-probs {r['behaviour_s']:.2f} s, "
            f"optimizer step {r['update_s']:.2f} s ({r['update_s'] / base['update_s']:.2f}x), "
            + ", ".join(f"{k} {r[k]:.2f} ({r[k] / base[k]:.2f}x)" for k in peaks)
            + f", loss {r['loss']:.6f}"
        )
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
