"""Training (issue 7, in progress): models (the tiny preset, transformers directories, GGUF), SFT
data with response-only labels, the SFT loop, the GRPO objective with HRD's per-token advantages,
and a first RL loop. The curriculum and `tritium train` come next. docs/training.md."""
