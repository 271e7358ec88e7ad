"""What a `tritium train` config may hold: its tables, their keys and each key's type, checked
before any work. A typo'd key (`stagse`, `[sft] stpes`, a `[stf]` table) used to be ignored, or to
end in a traceback minutes into a run.

The keys come from the code they configure, so the schema cannot drift from it: [sft] and [rl] are
the fields of SFTConfig and RLConfig (less those the run fills in), [eval] the keyword arguments of
evaluate_models plus its own `model` and `base`, [data] the data stage's."""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import types
import typing

STAGES = ("data", "sft", "rl", "eval")
TOP = {"stages": list[str], "out": str, "seed": int, "time_limit_s": float}
DATA = {"count": int, "difficulty": str, "ops": str, "heldout": int, "device": str, "rl_size": str}


def _fields(cls, filled: set[str]) -> dict[str, object]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.name not in filled}


def _keywords(fn, filled: set[str]) -> dict[str, object]:
    hints = typing.get_type_hints(fn)
    return {
        name: hints.get(name, object)
        for name, p in inspect.signature(fn).parameters.items()
        if name not in filled and p.default is not inspect.Parameter.empty
    }


def tables() -> dict[str, dict[str, object]]:
    """Table -> key -> type."""
    from .evaluate import evaluate_models
    from .rl import RLConfig
    from .sft import SFTConfig

    return {
        "data": DATA,
        "sft": _fields(SFTConfig, {"data", "out", "seed"}),
        "rl": _fields(RLConfig, {"tasks", "out", "seed"}),  # `model`: where RL starts without SFT
        "eval": {**_keywords(evaluate_models, {"seed", "log"}), "model": str, "base": bool},
    }


def _fits(value, hint) -> bool:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, h) for h in args)
    if origin is typing.Literal:  # a choice: its values checked before the work, not at the stage
        return value in args and all(type(value) is type(a) for a in args if a == value)
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if hint is dict or origin is dict:
        return isinstance(value, dict)
    if origin is list:
        return isinstance(value, list) and all(_fits(v, args[0]) for v in value)
    return hint is object


def _name(hint) -> str:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_name(h) for h in args if h is not type(None))  # TOML has no null
    if origin is list:
        return "list of strings" if args == (str,) else f"list of {_name(args[0])}"
    if origin is typing.Literal:
        return "one of " + ", ".join(map(repr, args))
    return {dict: "table", bool: "true/false", float: "number"}.get(hint, getattr(hint, "__name__", str(hint)))


def _unknown(what: str, key: str, known, show=str) -> str:
    close = difflib.get_close_matches(key, list(known), n=1)
    hint = f"did you mean {show(close[0])}?" if close else f"known: {', '.join(sorted(map(show, known)))}"
    return f"{what}: unknown; {hint}"


def problems(config: dict) -> list[str]:
    """Every unknown table or key and every value of the wrong type, one line each ("[table] key: ...")."""
    found, sections = [], tables()
    for key, value in config.items():
        if key in sections:
            if not isinstance(value, dict):
                found.append(f"{key}: expected a table [{key}], got {type(value).__name__}")
        elif key not in TOP and isinstance(value, dict):  # a [table] of its own
            found.append(_unknown(f"[{key}] table", key, sections, lambda s: f"[{s}]"))
        elif key not in TOP:
            found.append(_unknown(f"{key} key", key, TOP))
        elif not _fits(value, TOP[key]):
            found.append(f"{key}: expected {_name(TOP[key])}, got {value!r}")
    for stage in config.get("stages", []) if isinstance(config.get("stages"), list) else []:
        if stage not in STAGES:
            found.append(f"stages: unknown stage {stage!r}; use {list(STAGES)}")
    for section, keys in sections.items():
        table = config.get(section)
        if not isinstance(table, dict):
            continue
        for key, value in table.items():
            if key not in keys:
                found.append(_unknown(f"[{section}] {key} key", key, keys))
            elif not _fits(value, keys[key]):
                found.append(f"[{section}] {key}: expected {_name(keys[key])}, got {value!r}")
    return found


def check(config: dict, path: str) -> None:
    """Raises ValueError naming the file and every problem when the config has any."""
    found = problems(config)
    if found:
        raise ValueError(
            f"{path}: " + ("\n  ".join([f"{len(found)} problem(s):", *found]) if len(found) > 1 else found[0])
        )
