"""`tritium train --config FILE.toml` (the CLI runs this): the stages a config lists, in order.

    stages = ["data", "sft", "rl", "eval"]   # any subset, in this order
    out = "runs/NAME"                         # every stage writes under it
    time_limit_s = 540                        # optional: RL stops after the step that leaves too little of it
    [data]  synthesized tasks with reference solutions -> held-out split -> verified SFT JSONL
    [sft]   tritium.train.sft.SFTConfig fields (data and out are filled in)
    [rl]    tritium.train.rl.RLConfig fields (tasks, model and out are filled in)
    [eval]  evaluate_models' fields: each trained model on the held-out tasks, right after its stage;
            listed alone, the model `model` names, else the run's latest (RL's, else SFT's);
            `base = true` also evaluates the model SFT starts from, before SFT
See configs/ and docs/training.md. Under `accelerate launch` (or torchrun) SFT and RL are
data-parallel over the processes; the data and eval stages run on the main process alone.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import signal
import sys
import time
import tomllib

from .. import api
from . import schema
from .data import write_jsonl
from .evaluate import SAMPLES, evaluate_models, pass_ks
from .rl import RLConfig, train_rl
from .sft import SFTConfig, latest_checkpoint, train_sft

STAGES = schema.STAGES
RL_TASKS = "rl_tasks.jsonl"  # [data] rl_size = "mid" or "gpu": RL's tasks, else the SFT tasks
RL_SIZES = ("cpu", "mid", "gpu")
EARLIER = {
    "base": (),
    "model": (),
    "sft": ("base",),
    "rl": ("base", "sft"),
}  # the evals a stage's report sets beside its own


def data_stage(cfg: dict, out: pathlib.Path, seed: int) -> None:
    rl_size = cfg.get("rl_size", "cpu")
    if rl_size not in RL_SIZES:  # before the long work
        raise ValueError(f"[data] rl_size must be one of {', '.join(RL_SIZES)}, not {rl_size!r}")
    count = int(cfg.get("count", 40))
    heldout = int(cfg.get("heldout", max(1, count // 5)))
    if not 0 <= heldout < count:
        raise ValueError(
            f"[data] heldout = {heldout}: it must be at least 0 and leave some of the {count} tasks to train on"
        )
    tasks = out / "tasks.jsonl"
    drawn = {"difficulty": str(cfg.get("difficulty", "1-2")), "ops": cfg.get("ops", "")}
    twins = {"twin_size": rl_size} if rl_size != "cpu" else {}
    api.make_suite(out=tasks, count=count, seed=seed, with_solutions=True, **drawn, **twins)
    rows = [json.loads(line) for line in tasks.read_text().splitlines()]
    train, held = split_heldout(rows, heldout, at_size=rl_size != "cpu")
    write_jsonl(out / "train_tasks.jsonl", train)
    write_jsonl(out / "heldout.jsonl", held)
    stats = api.sft_data(out / "train_tasks.jsonl", out / "sft.jsonl", device=cfg.get("device", "auto"))
    print(
        f"data: {len(train)} training tasks, {len(held)} held out"
        + (f" (at {rl_size} size)" if rl_size != "cpu" else "")
        + f"; SFT examples kept {stats['kept']}, dropped {stats['dropped']}"
    )
    (out / RL_TASKS).unlink(missing_ok=True)  # an earlier run's: rl_tasks() would pick it up
    if rl_size != "cpu":
        # RL's tasks: the training tasks' own graphs with shapes solved again at rl_size, big enough to
        # time on a GPU. New graphs instead (until 2026-12-05) left the SFT model, sampled, no correct
        # rollout in 512 on the H200: nothing for RL to raise (docs/results/2026-12-05-gpu.md).
        rl = [t["meta"]["twin"] for t in train if t["meta"].get("twin")]
        write_jsonl(out / RL_TASKS, rl)
        print(f"data: {len(rl)} of {len(train)} training graphs at {rl_size} size for RL in {out / RL_TASKS}")


def split_heldout(rows: list[dict], heldout: int, at_size: bool) -> tuple[list[dict], list[dict]]:
    """(training tasks, held-out tasks): the last `heldout` tasks held out. `at_size`: the last
    `heldout` tasks that have a twin, held out as their twins (the size RL trains and times at, so
    that the eval's fast_1 clears the timing floor as RL's speed reward does); the tasks passed over
    train. Fewer twins than `heldout` is an error: a smaller held-out set would be silently noisier."""
    if not at_size:
        return rows[: len(rows) - heldout], rows[len(rows) - heldout :]
    chosen = [i for i in range(len(rows) - 1, -1, -1) if rows[i]["meta"].get("twin")][:heldout]
    if len(chosen) < heldout:
        raise ValueError(
            f"[data] heldout = {heldout}, but only {len(chosen)} of {len(rows)} tasks have a twin at RL's size: "
            "raise count (about a third of graphs have one at mid size)"
        )
    held = set(chosen)
    return [r for i, r in enumerate(rows) if i not in held], [rows[i]["meta"]["twin"] for i in sorted(held)]


def rl_tasks(out: pathlib.Path) -> pathlib.Path:
    """RL's tasks: the ones the data stage made with `rl_size` "mid" or "gpu", else the SFT tasks."""
    gpu = out / RL_TASKS
    return gpu if gpu.exists() else out / "train_tasks.jsonl"


def _gpus_wanted(config: dict) -> bool:
    import torch

    devices = [config.get(stage, {}).get("device", "auto") for stage in ("sft", "rl")]
    return torch.cuda.is_available() and any(d != "cpu" for d in devices)


class Evaluations:
    """The eval stage: each trained model on the held-out tasks right after the stage that trained
    it (so a run stopped later keeps it), then a report with the stages side by side."""

    def __init__(self, config: dict, stages: list[str], out: pathlib.Path, seed: int, state):
        self.on = "eval" in stages
        self.cfg = {k: v for k, v in config.get("eval", {}).items() if k not in ("model", "base")}
        self.base = bool(config.get("eval", {}).get("base", False))  # the model SFT starts from, too
        self.out, self.seed, self.state = out, seed, state
        self.verdicts: list[pathlib.Path] = []
        self.metrics: dict[str, dict] = {}  # each evaluated model's overall metrics, by stage name
        self.report_dir: pathlib.Path | None = None

    def after(self, name: str, model: pathlib.Path) -> None:
        """`model`'s eval under the stage `name`, beside the evals of the stages before it; SFT's checkpoint
        is evaluated with RL's when its eval is missing (a run whose SFT call left none), in one engine,
        the one judged while the other samples: the report compares the models RL started and ended with."""
        if self.on and self.state.is_main_process:
            self._join_earlier(name)
            evals = [
                (stage, path, self.out / "eval" / stage) for stage, path in self._missing_sft(name) + [(name, model)]
            ]
            for stage, path, _ in evals:
                print(f"eval: {stage} ({path})", flush=True)
            metrics = evaluate_models(
                [(str(path), str(where)) for _, path, where in evals],
                str(self.out / "heldout.jsonl"),
                seed=self.seed,
                **self.cfg,
            )
            for (stage, _, where), result in zip(evals, metrics):
                self.metrics[stage] = result
                self.verdicts.append(where / "verdicts.jsonl")
        self.state.wait_for_everyone()

    def _join_earlier(self, name: str) -> None:
        """The evals the stages before `name` already have join the report."""
        for stage in EARLIER[name]:
            verdicts = self.out / "eval" / stage / "verdicts.jsonl"
            if verdicts.exists() and verdicts not in self.verdicts:
                self.verdicts.append(verdicts)

    def _missing_sft(self, name: str) -> list[tuple[str, pathlib.Path]]:
        """For RL's eval, SFT's checkpoint when SFT has one and no eval yet."""
        if "sft" not in EARLIER[name] or (self.out / "eval" / "sft" / "verdicts.jsonl").exists():
            return []
        checkpoint = latest_checkpoint(self.out / "sft")
        return [("sft", checkpoint)] if checkpoint else []

    def before_sft(self, model: str) -> None:
        """With `base = true`, the model SFT starts from (a directory: the tiny preset is built by SFT)."""
        if not self.base:
            return
        if pathlib.Path(model).is_dir():
            return self.after("base", pathlib.Path(model))
        if self.on and self.state.is_main_process:
            print(f"eval: no base eval: {model} is not a model directory", flush=True)

    def alone(self, model: str | None) -> None:
        """Eval as the only stage: `model`, else the run's latest trained model under its stage's
        name (a run stopped after RL gets its eval in a later call), beside the earlier stages' evals."""
        if model:
            return self.after("model", pathlib.Path(model))
        checkpoints = {
            "sft": latest_checkpoint(self.out / "sft"),
            "rl": latest_checkpoint(self.out / "rl", "config.json"),
        }
        stage = next((name for name in ("rl", "sft") if checkpoints[name]), None)
        if stage is None:
            raise ValueError(f"eval alone needs [eval] model, or an SFT or RL checkpoint under {self.out}")
        self.after(stage, checkpoints[stage])

    def report(self) -> None:
        if len(self.verdicts) > 1:  # the stages side by side: base, SFT, RL
            api.report(self.verdicts, self.out / "report", ks=pass_ks(int(self.cfg.get("samples", SAMPLES))))
            self.report_dir = self.out / "report"
            print(f"eval: report with the stages side by side in {self.report_dir}")


def load_config(config_path: str) -> dict:
    """The config, checked against the schema (schema.py) before any work; errors name the file."""
    try:
        config = tomllib.loads(pathlib.Path(config_path).read_text())
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{config_path}: not valid TOML: {e}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{config_path}: cannot be read: {e}") from None
    schema.check(config, config_path)
    return config


def run(config_path: str) -> dict:
    """Runs the config's stages; what they made: {config, out, stages, checkpoints, eval, report}."""
    return run_config(load_config(config_path), config_path)


def run_dir(config: dict, config_path: str) -> pathlib.Path:
    """Where a config's stages write: its `out`, else runs/<the config file's stem>."""
    return pathlib.Path(config.get("out", "runs/" + pathlib.Path(config_path).stem))


def run_config(config: dict, config_path: str) -> dict:
    """run() on a config already loaded and checked (the reward ablation runs variants of one);
    `config_path` names it, and its stem is the default run name."""
    started = time.monotonic()
    stages = config.get("stages", list(STAGES))
    out = run_dir(config, config_path)
    out.mkdir(parents=True, exist_ok=True)
    seed = int(config.get("seed", 0))
    from accelerate import PartialState

    state = PartialState(cpu=not _gpus_wanted(config))
    evaluations = Evaluations(config, stages, out, seed, state)
    if "data" in stages:
        if state.is_main_process:
            data_stage(config.get("data", {}), out, seed)
        state.wait_for_everyone()
    if "sft" in stages:
        evaluations.before_sft(str(config.get("sft", {}).get("model", "tiny")))
        train_sft(SFTConfig(data=str(out / "sft.jsonl"), out=str(out / "sft"), seed=seed, **config.get("sft", {})))
        evaluations.after("sft", latest_checkpoint(out / "sft"))
    if "rl" in stages:
        start = latest_checkpoint(out / "sft") or config.get("rl", {}).get("model")
        rl = {k: v for k, v in config.get("rl", {}).items() if k != "model"}
        if config.get("time_limit_s") and not rl.get("time_limit_s"):  # what the stages before RL left of the run's
            rl["time_limit_s"] = max(1.0, config["time_limit_s"] - (time.monotonic() - started))
        if rl.get("curriculum") and "heldout" not in rl:
            rl["heldout"] = str(out / "heldout.jsonl")
        result = train_rl(RLConfig(tasks=str(rl_tasks(out)), model=str(start), out=str(out / "rl"), seed=seed, **rl))
        evaluations.after("rl", pathlib.Path(result["checkpoint"]))
    if "eval" in stages and "sft" not in stages and "rl" not in stages:
        evaluations.alone(config.get("eval", {}).get("model"))
    evaluations.report()
    checkpoints = {"sft": latest_checkpoint(out / "sft"), "rl": latest_checkpoint(out / "rl", "config.json")}
    return {
        "config": config_path,
        "out": str(out),
        "stages": stages,
        "checkpoints": {k: str(v) for k, v in checkpoints.items() if v},
        "eval": evaluations.metrics,
        "report": str(evaluations.report_dir) if evaluations.report_dir else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tritium train", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", required=True, help="a TOML file (configs/)")
    parser.add_argument(
        "--json",
        action="store_true",
        help="the stages' logs on stderr; on stdout one JSON document of what the run made",
    )
    args = parser.parse_args(argv)
    # Tritium's calls (the engine, synthesis) run with the GIL released, where KeyboardInterrupt would
    # wait for them to return: Ctrl-C ends the process as SIGTERM does. Its runners die with it and the
    # engine's guard removes its work directory; checkpoints are already on disk.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():
            summary = run(args.config)
    except (ValueError, FileNotFoundError, tomllib.TOMLDecodeError) as e:
        print(f"tritium: error: {e}", file=sys.stderr)
        return 2
    if args.json and int(os.environ.get("RANK", "0")) == 0:
        print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
