"""verl's custom reward functions, for `custom_reward_function.path=<this file>` (or
`pkg://tritium.integrations.verl`):

- `name=compute_score` (verl's naive reward manager): compute_score(data_source, solution_str,
  ground_truth, extra_info, **kwargs), one sample at a time;
- `name=compute_score_batch` with `reward_model.reward_manager=batch`: compute_score_batch(
  data_sources, solution_strs, ground_truths, extra_infos, **kwargs), the whole batch in one
  request, so group-relative rewards (DRTriton's speed weights) see each prompt's samples together.

The ground truth is the task (its source, or a task id that the server's --tasks or TRITIUM_TASKS
resolves). The client comes from the environment (tritium.integrations.default_client). Extra
keyword arguments (verl's reward_kwargs) are accepted and ignored.

Imports are absolute: verl's path loader runs this file as a module of no package.
"""

from __future__ import annotations

from tritium.integrations.client import default_client


def task_item(solution_str: str, ground_truth: str) -> dict:
    key = "task" if "class Model" in ground_truth else "task_id"
    return {"response": solution_str, key: ground_truth}


def _result(scored: dict) -> dict:
    """verl's score and the numbers it logs. `engine_error` is 1.0 where the engine could not judge
    the sample (status `error`: an outage or a broken task, not the model's fault), whose score is
    then 0.0 like a wrong answer's: filter or count those rather than learn from them."""
    reward, verdict = scored["reward"], scored["verdict"]
    return {
        "score": float(reward["scalar"]),
        "correct": float(reward["correct"]),
        "valid": float(reward["valid"]),
        "speedup": float(reward["speedup"] or 0.0),
        "engine_error": float(verdict.get("status") == "error"),
    }


def compute_score(data_source, solution_str: str, ground_truth: str, extra_info: dict | None = None, **kwargs) -> dict:
    """{"score": the configured scalar reward, and numeric extras verl logs: correct, valid, speedup,
    engine_error}."""
    return _result(default_client().score([task_item(solution_str, ground_truth)])[0])


def compute_score_batch(
    data_sources: list, solution_strs: list[str], ground_truths: list[str], extra_infos: list | None = None, **kwargs
) -> list[dict]:
    """compute_score for a batch; samples with the same ground truth (task) form one group."""
    groups: dict[str, int] = {}
    items = [
        {**task_item(s, g), "group": groups.setdefault(g, len(groups))} for s, g in zip(solution_strs, ground_truths)
    ]
    return [_result(scored) for scored in default_client().score(items)]
