"""Training (docs/training.md): models (the tiny preset, transformers directories, GGUF), SFT data
with response-only labels, the SFT loop, rollouts, the GRPO loop with HRD's per-token advantages and
the curriculum, the eval stage, and `tritium train --config` running them in order. Tritium's own
work (synthesis, SFT data, the engine, reports) is called in-process through `tritium.api`."""
