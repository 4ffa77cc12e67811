#!/usr/bin/env bash
# Prints the path of the argocd-health runner (main.go here), building it first
# when absent. The binary lives outside the checkout, named after a hash of
# go.mod, go.sum and main.go, so every clone on this machine reuses it and a
# change to the sources builds a new one. Building needs Go (>= the go.mod
# version) and, the first time, the Go module proxy.
set -euo pipefail
src="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
hash=$(cat "$src/go.mod" "$src/go.sum" "$src/main.go" | sha256sum | cut -c1-16)
dir="${SLUICE_CACHE_DIR:-$HOME/.cache/sluice}/tools"
bin="$dir/argocd-health-$hash"
if [ ! -x "$bin" ]; then
  command -v go >/dev/null || { echo "argocd-health: Go is needed to build the runner" >&2; exit 1; }
  mkdir -p "$dir"
  tmp=$(mktemp "$dir/.argocd-health-$hash.XXXXXX")
  trap 'rm -f "$tmp"' EXIT
  echo "argocd-health: building $bin" >&2
  (cd "$src" && CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=readonly go build -trimpath -buildvcs=false -o "$tmp" .)
  # Concurrent builds race harmlessly: each renames a complete binary into place.
  mv -f "$tmp" "$bin"
  trap - EXIT
fi
echo "$bin"
