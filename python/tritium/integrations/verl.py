"""verl's custom reward function: `custom_reward_function.path=<this file>`, `name=compute_score`.

verl calls compute_score(data_source, solution_str, ground_truth, extra_info) per sample; the
ground truth is the task (its source, or a task id that the server's --tasks or TRITIUM_TASKS
resolves). The client comes from the environment (tritium.integrations.default_client).
"""

from __future__ import annotations

from .client import default_client


def task_item(solution_str: str, ground_truth: str) -> dict:
    key = "task" if "class Model" in ground_truth else "task_id"
    return {"response": solution_str, key: ground_truth}


def compute_score(data_source, solution_str: str, ground_truth: str, extra_info: dict | None = None) -> dict:
    """{"score": the configured scalar reward, and numeric extras verl logs: correct, valid, speedup}."""
    result = default_client().score([task_item(solution_str, ground_truth)])[0]
    reward = result["reward"]
    return {"score": float(reward["scalar"]), "correct": float(reward["correct"]), "valid": float(reward["valid"]),
            "speedup": float(reward["speedup"] or 0.0)}
