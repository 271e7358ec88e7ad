"""TRL's GRPO reward function: GRPOTrainer(reward_funcs=[triton_reward], ...).

TRL calls reward_funcs(prompts=..., completions=..., **dataset_columns) for a batch holding every
generation of each prompt, and expects one float per completion. Completions may be strings or
conversations (the last message's content is the response). The task comes from a "task" column
(its source), a "task_id" column, or else the prompt's fenced block defining `class Model`.
Completions of the same prompt form a group (DRTriton's speed weights need it).
"""

from __future__ import annotations

from .. import api
from .client import RewardClient, default_client


def _text(message) -> str:
    if isinstance(message, str):
        return message
    if isinstance(message, list) and message:  # a conversation: [{"role", "content"}, ...]
        return "\n".join(str(m.get("content", "")) for m in message if isinstance(m, dict))
    return str(message)


ON_ERROR = ("none", "zero", "raise")


def make_reward(client: RewardClient | None = None, name: str = "triton_reward", on_error: str = "none"):
    """A GRPO reward function scoring with `client` (default: tritium.integrations.default_client()).
    `on_error`: what a completion the engine could not judge (status `error`: an outage, a broken
    or unknown task; not the model's fault) gets: "none" (TRL's "no reward for this sample": left
    out of the sum and shown as NaN in its logs), "zero" (the same as a wrong answer), or "raise"
    (the step fails: better than training on an outage)."""
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error must be one of {', '.join(ON_ERROR)}, got {on_error!r}")

    def score(scored: dict) -> float | None:
        if scored["verdict"].get("status") != "error":
            return float(scored["reward"]["scalar"])
        if on_error == "raise":
            raise RuntimeError(f"the engine could not judge a completion: {scored['verdict'].get('message')}")
        return None if on_error == "none" else 0.0

    def reward(prompts, completions, **kwargs) -> list[float | None]:
        tasks, task_ids = kwargs.get("task"), kwargs.get("task_id")
        items = []
        for i, (prompt, completion) in enumerate(zip(prompts, completions)):
            completion = completion[-1]["content"] if isinstance(completion, list) and completion else completion
            prompt_text = _text(prompt)
            item = {"response": _text(completion), "group": prompt_text}
            if tasks is not None and tasks[i]:
                item["task"] = tasks[i]
            elif task_ids is not None and task_ids[i]:
                item["task_id"] = task_ids[i]
            elif (source := api.task_in_prompt(prompt_text)) is not None:
                item["task"] = source
            items.append(item)
        return [score(s) for s in (client or default_client()).score(items)]

    reward.__name__ = name  # TRL logs each reward function under its name
    return reward


triton_reward = make_reward()
