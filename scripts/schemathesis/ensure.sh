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
# Needs python3; Debian's python3-venv is installed when its venv module is
# missing. Idempotent;
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
  if ! python3 -m venv "$dir" >&2; then
    # Debian's python3 splits venv (and ensurepip) into python3-venv.
    echo "Installing python3-venv from Debian's packages" >&2
    rm -rf "$dir"
    sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq python3-venv >&2
    python3 -m venv "$dir" >&2
  fi
  "$dir/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$VERSION" >&2
  touch "$dir/.installed"
fi
echo "$dir/bin/st"
