#!/usr/bin/env bash
# Usage: scripts/tools/ensure-tool.sh <helm|kubeconform|kube-schemas>
#
# Prints the path of a tool the chart checks need, building it first when it is
# absent. Tools are built from Go modules (through the Go module proxy, the only
# source reachable from these machines besides the npm registry) into a cache
# outside the checkout, so every clone on the machine reuses them:
#
#   helm          ~/.cache/sluice/tools/helm/<version>/helm
#   kubeconform   ~/.cache/sluice/tools/kubeconform/<version>/kubeconform
#   kube-schemas  ~/.cache/sluice/tools/kube-schemas/<k8s version>/   (a directory)
#
# kube-schemas are the JSON Schemas kubeconform validates against, in its layout
# ({kind}-{group}-{version}.json). kubeconform downloads them from GitHub by
# default, which these machines cannot reach; they are generated here from the
# OpenAPI document in the Go module source of k8s.io/kubernetes
# (api/openapi-spec/swagger.json) by scripts/tools/openapi2jsonschema.mjs.
#
# Idempotent; concurrent callers (parallel jest workers, two clones) wait on a
# per-tool lock (flock) instead of building twice. Build output goes to stderr,
# only the path goes to stdout. Versions are pinned below and can be overridden
# with SLUICE_HELM_VERSION, SLUICE_KUBECONFORM_VERSION, SLUICE_K8S_VERSION.
set -euo pipefail

HELM_VERSION="${SLUICE_HELM_VERSION:-v4.3.1}"
KUBECONFORM_VERSION="${SLUICE_KUBECONFORM_VERSION:-v0.8.0}"
K8S_VERSION="${SLUICE_K8S_VERSION:-v1.37.2}"

here="$(cd "$(dirname "$0")" && pwd)"
tools="${SLUICE_CACHE_DIR:-$HOME/.cache/sluice}/tools"
name="${1:-}"

case "$name" in
  helm) version="$HELM_VERSION" ;;
  kubeconform) version="$KUBECONFORM_VERSION" ;;
  kube-schemas) version="$K8S_VERSION" ;;
  *)
    echo "usage: $0 <helm|kubeconform|kube-schemas>" >&2
    exit 64
    ;;
esac

mkdir -p "$tools"
if [ "$name" = kube-schemas ]; then
  target="$tools/kube-schemas/$version"
  done_marker="$target/.complete"
else
  target="$tools/$name/$version/$name"
  done_marker="$target"
fi

# Fast path without the lock: the artefact is only ever moved into place whole.
if [ -e "$done_marker" ]; then
  echo "$target"
  exit 0
fi

exec 9>"$tools/.$name.lock"
flock 9
if [ -e "$done_marker" ]; then # built by whoever held the lock before us
  echo "$target"
  exit 0
fi

command -v go >/dev/null 2>&1 || {
  echo "ensure-tool: building $name needs Go (go not found on PATH)" >&2
  exit 1
}

start=$(date +%s)
case "$name" in
  helm | kubeconform)
    if [ "$name" = helm ]; then
      major="${version#v}"
      major="${major%%.*}"
      pkg="helm.sh/helm/v$major/cmd/helm"
      # As helm's Makefile does, so `helm version` reports the release.
      ldflags="-s -w -X helm.sh/helm/v$major/internal/version.version=$version"
    else
      pkg="github.com/yannh/kubeconform/cmd/kubeconform"
      ldflags="-s -w"
    fi
    echo "ensure-tool: building $pkg@$version (first time only; several minutes on 2 cores)" >&2
    tmp="$(mktemp -d "$tools/.build-$name.XXXXXX")"
    trap 'rm -rf "$tmp"' EXIT
    # A throw-away module directory: `go install pkg@version` ignores any go.mod
    # around, but GOFLAGS from the environment (e.g. -mod=vendor) must not leak in.
    # Own build cache: the shared ~/.cache/go-build may be cleaned by someone
    # else's `go clean -cache` in the middle of a build (seen here: "could not
    # import context (open …/go-build/…-d: no such file or directory)").
    # One retry covers any other transient failure (a proxy hiccup).
    # The cache is per tool (the locks are too) and removed after a successful
    # build: it is about 1 GB for helm and only a version bump would reuse it.
    gocache="${SLUICE_TOOLS_GOCACHE:-$tools/.go-build-$name}"
    build() {
      (cd "$tmp" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOBIN="$tmp/bin" GOCACHE="$gocache" \
        go install -trimpath -ldflags "$ldflags" "$pkg@$version") >&2
    }
    build || {
      echo "ensure-tool: build of $name failed, retrying once" >&2
      build
    }
    [ -n "${SLUICE_TOOLS_GOCACHE:-}" ] || rm -rf "$gocache"
    mkdir -p "$(dirname "$target")"
    mv "$tmp/bin/$name" "$target.partial"
    mv "$target.partial" "$target"
    ;;
  kube-schemas)
    echo "ensure-tool: generating Kubernetes $version JSON Schemas for kubeconform" >&2
    tmp="$(mktemp -d "$tools/.build-$name.XXXXXX")"
    trap 'rm -rf "$tmp"' EXIT
    # From an empty directory, so no go.mod around can interfere.
    json="$(cd "$tmp" && GOFLAGS= go mod download -json "k8s.io/kubernetes@$version")"
    dir="$(printf '%s' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' | head -n1)"
    swagger="$dir/api/openapi-spec/swagger.json"
    [ -f "$swagger" ] || {
      echo "ensure-tool: $swagger not found (go mod download said: $json)" >&2
      exit 1
    }
    node "$here/openapi2jsonschema.mjs" --openapi "$swagger" --version "$version" --out "$tmp/$version" >&2
    touch "$tmp/$version/.complete"
    mkdir -p "$(dirname "$target")"
    rm -rf "$target"
    mv "$tmp/$version" "$target"
    ;;
esac
echo "ensure-tool: $name $version ready in $(($(date +%s) - start)) s" >&2
echo "$target"
