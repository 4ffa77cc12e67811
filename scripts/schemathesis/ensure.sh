#!/usr/bin/env bash
# Usage: scripts/schemathesis/ensure.sh
#
# Prints the path of the Schemathesis CLI (`st`) that the API fuzzing test
# (gateway/test/schemathesis.test.ts) runs, installing it first when it is
# absent: a Python virtual environment with the pinned version from PyPI, in a
# cache outside the checkout so every clone on the machine reuses it:
#
#   ~/.cache/sluice/schemathesis/<version>/bin/st
#
# Needs python3 with the venv module (Debian: python3-venv). Idempotent;
# concurrent callers wait on a lock (flock) instead of installing twice.
# Install output goes to stderr, only the path goes to stdout. The version can
# be overridden with SLUICE_SCHEMATHESIS_VERSION.
set -euo pipefail

VERSION="${SLUICE_SCHEMATHESIS_VERSION:-4.32.5}"
root="${SLUICE_CACHE_DIR:-$HOME/.cache/sluice}/schemathesis"
dir="$root/$VERSION"
mkdir -p "$root"

exec 9>"$root/.lock"
flock 9

if [[ ! -x "$dir/bin/st" || ! -f "$dir/.installed" ]]; then
  rm -rf "$dir"
  echo "Installing Schemathesis $VERSION into $dir" >&2
  python3 -m venv "$dir" >&2
  "$dir/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$VERSION" >&2
  touch "$dir/.installed"
fi
echo "$dir/bin/st"
