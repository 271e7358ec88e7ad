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


def make_reward(client: RewardClient | None = None, name: str = "triton_reward"):
    """A GRPO reward function scoring with `client` (default: tritium.integrations.default_client())."""

    def reward(prompts, completions, **kwargs) -> list[float]:
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
        scored = (client or default_client()).score(items)
        return [float(s["reward"]["scalar"]) for s in scored]

    reward.__name__ = name  # TRL logs each reward function under its name
    return reward


triton_reward = make_reward()
