#!/usr/bin/env bash
# Unpacks .deps/debs/*.deb (from scripts/fetch-debs.sh) into .deps/root; prints the prefix.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .deps/root
for deb in .deps/debs/*.deb; do dpkg-deb -x "$deb" .deps/root; done
echo "$PWD/.deps/root/usr"
