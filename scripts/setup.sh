#!/usr/bin/env bash
# Idempotent set-up for `make demo` and `make test` on a Debian machine: system packages when
# missing, the .venv with pinned Python packages, then Tritium itself (C++ core, CLI, bindings),
# installed editable with its build directory kept in build/py for incremental rebuilds.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VENV:-.venv}
BUILD_DIR=${BUILD_DIR:-build/py}
APT_PACKAGES=(g++ make nlohmann-json3-dev libcli11-dev libfmt-dev libgtest-dev libbenchmark-dev
  libssl-dev libsqlite3-dev libcpp-httplib-dev libseccomp2 util-linux)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
# A Python with venv and headers (for the extension): Debian's when the machine has none of its own.
has_python='import ensurepip, os, sysconfig, venv; assert os.path.exists(sysconfig.get_paths()["include"] + "/Python.h")'
if ! python3 -c "$has_python" >/dev/null 2>&1; then missing+=(python3 python3-venv python3-dev); fi
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: error: need root for apt-get; run: sudo apt-get install -y ${missing[*]}" >&2
    exit 3
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating $VENV"
  python3 -m venv "$VENV"
fi
PY="$VENV/bin/python"

stamp="$VENV/.requirements-dev.stamp"
if [ ! -f "$stamp" ] || [ requirements/dev.txt -nt "$stamp" ]; then
  echo "setup: installing Python packages (requirements/dev.txt)"
  "$PY" -m pip install -q --disable-pip-version-check -r requirements/dev.txt
  touch "$stamp"
fi

echo "setup: building and installing tritium (C++ core, CLI, bindings, tests, benchmarks)"
"$PY" -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps \
  -Cbuild-dir="$BUILD_DIR" -Ccmake.build-type=Release \
  -Ccmake.define.TRITIUM_BUILD_TESTS=ON -Ccmake.define.TRITIUM_BUILD_BENCH=ON \
  -e .
