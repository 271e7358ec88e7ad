#!/usr/bin/env bash
# For a build machine without network (a lent GPU box): download the header-only C++ dependencies
# as Debian packages into .deps/debs here; there, scripts/unpack-debs.sh unpacks them into
# .deps/root and prints the CMAKE_PREFIX_PATH to use. Nothing is installed system-wide.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .deps/debs
cd .deps/debs
apt-get download nlohmann-json3-dev libcli11-dev libfmt-dev libfmt9 >/dev/null
ls
