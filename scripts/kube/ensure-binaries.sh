#!/usr/bin/env bash
# Builds the kube-apiserver and etcd binaries that scripts/with-kube.sh runs,
# from Go modules (the modules in scripts/kube/apiserver and scripts/kube/etcd,
# versions in scripts/kube/versions.env), into a cache outside the checkout:
#   ${SLUICE_CACHE_DIR:-~/.cache/sluice}/kube/k8s-<version>-etcd-<version>/
# so every clone on this machine reuses them. Idempotent: builds only what is
# missing, under a lock so that concurrent runs build once. Prints the two
# paths, kube-apiserver first, one a line. See docs/testing-kubernetes.md.
#
# With --node it also builds what scripts/with-node.sh runs, into the same
# directory: kubelet, kube-scheduler, kube-controller-manager, kube-proxy and
# kubectl (the API server's module), containerd, its runc shim and ctr
# (scripts/kube/containerd, under containerd-<version>/), crictl
# (scripts/kube/crictl) and the sandbox process (scripts/kube/pause).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/kube/versions.env
. "$here/versions.env"
staging="v0.${KUBE_VERSION#1.}"
dir="${SLUICE_CACHE_DIR:-$HOME/.cache/sluice}/kube/k8s-$KUBE_VERSION-etcd-$ETCD_VERSION"
apiserver="$dir/kube-apiserver"
etcd="$dir/etcd"

node=""
[ "${1:-}" = --node ] && node=1
containerd_dir="$dir/containerd-$CONTAINERD_VERSION"
node_bins=(kubelet kube-scheduler kube-controller-manager kube-proxy kubectl pause crictl
  "containerd-$CONTAINERD_VERSION/containerd" "containerd-$CONTAINERD_VERSION/containerd-shim-runc-v2"
  "containerd-$CONTAINERD_VERSION/ctr")
built_all() {
  local b
  for b in kube-apiserver etcd ${node:+"${node_bins[@]}"}; do
    [ -x "$dir/$b" ] || return 1
  done
}

if built_all; then
  printf '%s\n%s\n' "$apiserver" "$etcd"
  exit 0
fi

die() {
  echo "ensure-binaries: $*" >&2
  exit 1
}

command -v go >/dev/null || die "needs Go (1.26 or newer) on PATH to build kube-apiserver and etcd"

# The go.mod files must pin what versions.env says (they decide what is built;
# versions.env decides where it is cached).
grep -Eq "^\s*(require )?k8s\.io/kubernetes v$KUBE_VERSION( |\$)" "$here/apiserver/go.mod" ||
  die "scripts/kube/apiserver/go.mod does not require k8s.io/kubernetes v$KUBE_VERSION: run scripts/kube/update-modules.sh"
if grep -E '^\s+k8s\.io/[a-z-]+ => ' "$here/apiserver/go.mod" | grep -vq " $staging\$"; then
  die "scripts/kube/apiserver/go.mod replaces staging modules with versions other than $staging: run scripts/kube/update-modules.sh"
fi
grep -Eq "^\s*go\.etcd\.io/etcd/server/v3 v$ETCD_VERSION( |\$)" "$here/etcd/go.mod" ||
  die "scripts/kube/etcd/go.mod does not require go.etcd.io/etcd/server/v3 v$ETCD_VERSION: run scripts/kube/update-modules.sh"
grep -Eq "^\s*github\.com/containerd/containerd/v2 v$CONTAINERD_VERSION( |\$)" "$here/containerd/go.mod" ||
  die "scripts/kube/containerd/go.mod does not require containerd v$CONTAINERD_VERSION: run scripts/kube/update-modules.sh"
grep -Eq "^\s*sigs\.k8s\.io/cri-tools v$CRICTL_VERSION( |\$)" "$here/crictl/go.mod" ||
  die "scripts/kube/crictl/go.mod does not require cri-tools v$CRICTL_VERSION: run scripts/kube/update-modules.sh"

mkdir -p "$dir"
exec 9>"$dir/.lock"
if ! flock -n 9; then
  echo "ensure-binaries: another build holds $dir/.lock, waiting" >&2
  flock 9
fi

# The build cache of these builds is ~3 GiB and of no use once the binaries
# exist (a version bump recompiles nearly everything): it lives beside them and
# goes when both are built, unless SLUICE_KUBE_GOCACHE names one to keep.
gocache="${SLUICE_KUBE_GOCACHE:-$dir/.go-build}"

# build NAME MODULE_DIR PACKAGE [LDFLAGS...]
build() {
  local name=$1 moddir=$2 pkg=$3 start=$SECONDS
  local tmp
  tmp="$(dirname "$dir/$name")/.$(basename "$name").tmp"
  shift 3
  [ -x "$dir/$name" ] && return 0
  echo "ensure-binaries: building $name from $pkg into $dir (the first build takes several minutes)" >&2
  rm -f "$tmp"
  # Static binaries (no C toolchain needed), flags from the environment kept
  # out, and a build cache of our own ($gocache): the shared ~/.cache/go-build
  # may be cleaned by someone else's `go clean -cache` in the middle of a build
  # ("could not import bytes (open …/go-build/…-d: no such file or directory)",
  # seen here). One retry covers that and other transient failures.
  local attempt
  for attempt in 1 2; do
    if (
      cd "$here/$moddir"
      CGO_ENABLED=0 GOFLAGS='' GOCACHE="$gocache" \
        go build -mod=readonly -buildvcs=false -trimpath -ldflags="-s -w $*" -o "$tmp" "$pkg"
    ) >&2; then
      break
    fi
    [ "$attempt" = 2 ] && die "building $name failed (see docs/testing-kubernetes.md, 'When a version bump breaks the build')"
    echo "ensure-binaries: building $name failed, retrying once" >&2
  done
  mv -f "$tmp" "$dir/$name"
  echo "ensure-binaries: built $name in $((SECONDS - start))s ($(du -h "$dir/$name" | cut -f1))" >&2
}

# kube-apiserver reports this version (/version, kube-apiserver --version), as
# the release build (hack/lib/version.sh) would set it.
minor=${KUBE_VERSION#1.}
minor=${minor%%.*}
version_flags=()
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  version_flags+=(-X "$p.gitVersion=v$KUBE_VERSION" -X "$p.gitMajor=1" -X "$p.gitMinor=$minor" -X "$p.gitTreeState=clean")
done

build etcd etcd go.etcd.io/etcd/server/v3
build kube-apiserver apiserver k8s.io/kubernetes/cmd/kube-apiserver "${version_flags[@]}"
if [ -n "$node" ]; then
  for c in kube-scheduler kube-controller-manager kube-proxy kubelet kubectl; do
    build "$c" apiserver "k8s.io/kubernetes/cmd/$c" "${version_flags[@]}"
  done
  build pause pause .
  build crictl crictl sigs.k8s.io/cri-tools/cmd/crictl -X "sigs.k8s.io/cri-tools/pkg/version.Version=v$CRICTL_VERSION"
  mkdir -p "$containerd_dir"
  containerd_flags=(-X "github.com/containerd/containerd/v2/version.Version=v$CONTAINERD_VERSION")
  for c in containerd containerd-shim-runc-v2 ctr; do
    build "containerd-$CONTAINERD_VERSION/$c" containerd "github.com/containerd/containerd/v2/cmd/$c" "${containerd_flags[@]}"
  done
fi
if [ -z "${SLUICE_KUBE_GOCACHE:-}" ]; then
  chmod -R u+w "$gocache" 2>/dev/null || true
  rm -rf "$gocache"
fi

printf '%s\n%s\n' "$apiserver" "$etcd"
