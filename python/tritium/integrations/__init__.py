"""Tritium's rewards inside RL frameworks (docs/integrations.md).

- `verl.compute_score`: verl's custom reward function contract.
- `trl.triton_reward` / `trl.make_reward`: TRL's GRPO reward function contract.
- `RewardClient`: what both use: verdicts and rewards for raw responses, from the engine in this
  process or from a list of `tritium serve` endpoints.
"""

from .client import RewardClient, default_client

__all__ = ["RewardClient", "default_client"]
