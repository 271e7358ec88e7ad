#!/usr/bin/env bash
# For a build machine without network (a lent GPU box): download the C++ build dependencies as
# Debian packages into .deps/debs here (the header-only libraries, and the headers and .so links
# of OpenSSL and SQLite, whose runtime libraries that machine already has); there,
# scripts/unpack-debs.sh unpacks them into .deps/root and prints the CMAKE_PREFIX_PATH to use.
# Nothing is installed system-wide.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .deps/debs
cd .deps/debs
apt-get download nlohmann-json3-dev libcli11-dev libfmt-dev libfmt9 libssl-dev libsqlite3-dev >/dev/null
ls
