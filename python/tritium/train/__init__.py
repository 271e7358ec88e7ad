"""Training (issue 7, in progress): models (the tiny preset, transformers directories, GGUF), SFT
data with response-only labels, and the SFT loop. GRPO with HRD, the curriculum and `tritium
train` come next. docs/training.md."""
