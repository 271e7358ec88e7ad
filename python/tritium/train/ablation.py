"""`python -m tritium.train.ablation --config FILE.toml [--rewards hrd,blended] [--stages rl,eval] [--steps N]`:
RL from one SFT checkpoint once per reward scheme, on the same tasks, budget and seeds, then one report.

The ablation TritonRL's claim rests on (HRD against a blended reward, issue 24). The config's run
must have its data and SFT stages done (its `out` holds the SFT checkpoint and its eval). Each
scheme gets `OUT/ablation/SCHEME/`: the run's data and SFT linked in, then the config's RL and
eval stages with `[rl] reward` set to the config's own reward config with that scheme. The report
in `OUT/ablation/report/` puts SFT and the schemes side by side, in that order, so its "Change from
the run before" gives the first scheme against SFT and each next scheme against the one before,
each with its paired bootstrap interval over the held-out tasks (docs/metrics.md); with `[eval]
greedy`, `OUT/ablation/report-greedy/` does the same for the greedy answers.

`--stages` splits an arm over several invocations (a GPU call of 10 minutes holds one arm's RL or its
eval, not both): `rl` starts the arm's RL over (its earlier checkpoints and eval removed), `eval`
evaluates the latest RL checkpoint of every named arm, and SFT's checkpoint when the run has no SFT
eval, in one engine, each model judged while the next is sampled. The report is made once every
named scheme has its eval.
`--steps` sets every arm's RL steps (the same budget for each, whatever the machine's speed).
"""

from __future__ import annotations

import argparse
import copy
import json
import pathlib
import shutil
import sys

from .. import api
from .evaluate import SAMPLES, evaluate_models, pass_ks
from .sft import latest_checkpoint

SHARED = ("heldout.jsonl", "train_tasks.jsonl", "rl_tasks.jsonl", "sft.jsonl", "tasks.jsonl", "sft")


STAGES = ("rl", "eval")
GREEDY = pathlib.Path("greedy") / "verdicts.jsonl"  # beside an eval's verdicts, with `[eval] greedy`


def arm_config(config: dict, out: pathlib.Path, scheme: str, stages=STAGES, steps: int | None = None) -> dict:
    """The config of one scheme's arm: its own out, its `stages` (RL, eval or both) and `steps` if
    given, the reward's scheme set."""
    arm = copy.deepcopy(config)
    arm["out"] = str(out)
    arm["stages"] = list(stages)
    rl = arm.setdefault("rl", {})
    rl["reward"] = json.dumps({**json.loads(rl.get("reward", "{}") or "{}"), "scheme": scheme})
    if steps is not None:
        rl["steps"] = steps
    arm.get("eval", {}).pop("base", None)  # the base model's eval, if any, is the run's
    return arm


def link_run(run: pathlib.Path, arm: pathlib.Path) -> None:
    """The run's data and SFT in the arm's directory, linked (an SFT checkpoint is hundreds of MB)."""
    arm.mkdir(parents=True, exist_ok=True)
    for name in SHARED:
        source, link = run / name, arm / name
        if source.exists() and not link.exists():
            link.symlink_to(source.resolve(), target_is_directory=source.is_dir())


def arm_verdicts(root: pathlib.Path, scheme: str) -> pathlib.Path:
    """Where an arm's eval of its RL checkpoint writes its verdicts."""
    return root / scheme / "eval" / "rl" / "verdicts.jsonl"


def evaluate_arms(config: dict, run: pathlib.Path, schemes: list[str], sft_eval: pathlib.Path) -> None:
    """Each arm's latest RL checkpoint on the held-out tasks, and the SFT checkpoint when its eval is
    missing, in one evaluate_models call: one engine, each model judged while the next is sampled."""
    root = run / "ablation"
    evals = [(latest_checkpoint(root / s / "rl", "config.json"), arm_verdicts(root, s).parent) for s in schemes]
    if not sft_eval.exists():
        evals.insert(0, (latest_checkpoint(run / "sft"), sft_eval.parent))
    for model, where in evals:
        print(f"ablation: eval of {model} into {where}", flush=True)
    settings = {k: v for k, v in config.get("eval", {}).items() if k not in ("model", "base")}
    seed = int(config.get("seed", 0))
    evaluate_models([(str(m), str(w)) for m, w in evals], str(run / "heldout.jsonl"), seed=seed, **settings)


def ablate(config_path: str, schemes: list[str], stages=STAGES, steps: int | None = None) -> dict:
    """Runs each scheme's arm (its `stages`), then the report once every arm has its eval; what it
    made: {arms, report, changes} (report None, changes empty, while an arm's eval is missing)."""
    from .__main__ import load_config, run_config, run_dir

    config = load_config(config_path)
    run = run_dir(config, config_path)
    sft_eval = run / "eval" / "sft" / "verdicts.jsonl"  # made with the arms' when missing
    if latest_checkpoint(run / "sft") is None:
        raise ValueError(f"{run} has no SFT checkpoint: run the config's data and sft stages first")
    if len(set(schemes)) != len(schemes) or not schemes:
        raise ValueError(f"--rewards {','.join(schemes)}: name each scheme once")
    if not stages or set(stages) - set(STAGES):
        raise ValueError(f"--stages {','.join(stages)}: expected rl, eval or both")
    if steps is not None and steps < 1:
        raise ValueError(f"--steps {steps}: expected at least 1")
    for scheme in schemes:  # a bad name stops here, not after the first arm's RL
        api.reward_config(json.loads(arm_config(config, run, scheme)["rl"]["reward"]))
    root = run / "ablation"
    if "rl" not in stages:  # checked for every arm before any eval runs
        for scheme in schemes:
            if latest_checkpoint(root / scheme / "rl", "config.json") is None:
                raise ValueError(f"the {scheme} arm has no RL checkpoint: run its rl stage first")
    arms = {}
    for scheme in schemes:
        out = root / scheme
        link_run(run, out)
        if "rl" in stages:  # the arm starts over: an earlier run's logs and eval would be taken for this one's
            shutil.rmtree(out / "rl", ignore_errors=True)
            shutil.rmtree(arm_verdicts(root, scheme).parent, ignore_errors=True)
            print(f"ablation: {scheme} in {out} (rl)", flush=True)
            arms[scheme] = run_config(arm_config(config, out, scheme, ["rl"], steps), f"{config_path} ({scheme})")
    if "eval" in stages:
        evaluate_arms(config, run, schemes, sft_eval)
    missing = [s for s in schemes if not arm_verdicts(root, s).exists()]
    if missing:
        print(f"ablation: the report waits for the eval of {', '.join(missing)}", flush=True)
        return {"arms": arms, "report": None, "changes": []}
    inputs = root / "report-inputs"  # named copies: every arm's verdict file is eval/rl/verdicts.jsonl
    inputs.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(sft_eval, inputs / "sft.jsonl")
    for scheme in schemes:
        shutil.copyfile(arm_verdicts(root, scheme), inputs / f"{scheme}.jsonl")
    samples = int(config.get("eval", {}).get("samples", SAMPLES))
    files = [inputs / "sft.jsonl"] + [inputs / f"{s}.jsonl" for s in schemes]
    report = api.report(files, root / "report", ks=pass_ks(samples))
    for c in report["changes"]:
        print(f"ablation: {change_line(c)}", flush=True)
    greedy = _greedy_report(sft_eval, root, schemes)
    return {"arms": arms, "report": str(root / "report"), "changes": report["changes"], "greedy_changes": greedy}


def _greedy_report(sft_eval: pathlib.Path, root: pathlib.Path, schemes: list[str]) -> list[dict]:
    """The same report over the greedy answers (`[eval] greedy`), in OUT/ablation/report-greedy/,
    when SFT's eval and every arm's have them: pass@1 without sampling noise."""
    found = [sft_eval.parent / GREEDY] + [arm_verdicts(root, s).parent / GREEDY for s in schemes]
    if not all(f.exists() for f in found):
        return []
    inputs = root / "report-inputs" / "greedy"
    inputs.mkdir(parents=True, exist_ok=True)
    for name, source in zip(["sft", *schemes], found):
        shutil.copyfile(source, inputs / f"{name}.jsonl")
    report = api.report([inputs / f"{n}.jsonl" for n in ["sft", *schemes]], root / "report-greedy", ks=[1])
    for c in report["changes"]:
        print(f"ablation: greedy: {change_line(c)}", flush=True)
    return report["changes"]


def change_line(entry: dict) -> str:
    c = entry["change"]
    low, high = c["interval"] or (None, None)
    interval = "no interval" if low is None else f"95% interval [{100 * low:+.1f}, {100 * high:+.1f}] pts"
    verdict = "beyond it" if c["beyond"] else "within it"
    return (
        f"{entry['run']} against {entry['against']}, {c['metric']} on {c['tasks']} tasks: "
        f"{100 * c['before']:.1f}% -> {100 * c['after']:.1f}% ({100 * c['delta']:+.1f} pts; {interval}, {verdict})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tritium.train.ablation",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", required=True, help="the run's TOML file (its data and sft stages done)")
    parser.add_argument("--rewards", default="hrd,blended", help="reward schemes, comma-separated (docs/rewards.md)")
    parser.add_argument("--stages", default="rl,eval", help="each arm's stages: rl, eval or both (default)")
    parser.add_argument("--steps", type=int, help="every arm's RL steps (default: the config's)")
    args = parser.parse_args(argv)
    try:
        ablate(
            args.config, [s for s in args.rewards.split(",") if s], [s for s in args.stages.split(",") if s], args.steps
        )
    except (ValueError, FileNotFoundError) as e:
        print(f"tritium: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
