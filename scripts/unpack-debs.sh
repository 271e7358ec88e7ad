#!/usr/bin/env bash
# Unpacks .deps/debs/*.deb (from scripts/fetch-debs.sh) into .deps/root; prints the prefix.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .deps/root
for deb in .deps/debs/*.deb; do dpkg-deb -x "$deb" .deps/root; done
# A -dev package's libfoo.so links to a runtime library (libfoo.so.N.M) that is not unpacked here:
# point each dangling one at the system's library of the same soname (libfoo.so.N).
for link in .deps/root/usr/lib/x86_64-linux-gnu/*.so; do
  [ -L "$link" ] && [ ! -e "$link" ] || continue
  soname=$(basename "$(readlink "$link")" | sed -E 's/(\.so\.[0-9]+).*/\1/')
  for dir in /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu; do
    if [ -e "$dir/$soname" ]; then ln -sfn "$dir/$soname" "$link" && break; fi
  done
  [ -e "$link" ] || echo "unpack-debs: warning: no system $soname for $link" >&2
done
echo "$PWD/.deps/root/usr"
