#!/usr/bin/env bash
# Runs a command with a Kubernetes cluster that has a real node: besides etcd
# and kube-apiserver (scripts/with-kube.sh), kube-controller-manager,
# kube-scheduler, kube-proxy (iptables mode) and a kubelet with containerd,
# runc and CNI (bridge + host-local + portmap), every one a host process like
# Kubernetes' own hack/local-up-cluster.sh. The command gets
#
#   SLUICE_TEST_NODE_KUBECONFIG   the cluster's admin kubeconfig
#   SLUICE_TEST_NODE_HOST_IP      the node's address on its bridge: pods reach
#                                 the host there, and the API server listens there
#   SLUICE_TEST_NODE_IMAGE        the Sluice image, imported into the node
#                                 (.sluice/image.env, written by make image)
#   SLUICE_TEST_NODE_NEXT_IMAGE   the next release's image and the version it
#   SLUICE_TEST_NODE_NEXT_VERSION reports (.sluice/image-next.env, written by
#                                 scripts/image/build-next.sh; empty without it)
#   SLUICE_TEST_NODE_KUBECTL      kubectl of the same release
#   SLUICE_TEST_NODE_CTR          ctr and the node's containerd address, a
#                                 command prefix (`$SLUICE_TEST_NODE_CTR images tag …`)
#   SLUICE_TEST_NODE_APISERVER_PID  the node's API server (a test stops it
#                                 with SIGSTOP to cut the cluster off)
#
# while SLUICE_TEST_KUBECONFIG (the suite's node-less API server) passes through
# unchanged. Everything listens on 127.0.0.1 or on the node's own bridge. When
# the command ends, everything is torn down and what the node changed on the
# host is put back (iptables rules and chains, sysctls, cgroups, mounts, the
# bridge, log directories); the script fails when something is still left.
# Needs root. See docs/testing-kubernetes.md, "The test node".
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
here="$root/scripts/kube"
[ $# -gt 0 ] || {
  echo "usage: scripts/with-node.sh <command> [args...]" >&2
  exit 64
}
[ "$(id -u)" -eq 0 ] || exec sudo --preserve-env "$0" "$@"
command -v node >/dev/null || PATH="$("$root/scripts/node24.sh"):$PATH"
# shellcheck source=scripts/kube/node-host.sh
. "$here/node-host.sh"

# The node's bridge and pod network: a private /24 (override with
# SLUICE_NODE_POD_CIDR=a.b.c.0/24 when this one is taken here).
pod_cidr=${SLUICE_NODE_POD_CIDR:-10.213.0.0/24}
node_ip="${pod_cidr%.0/24}.1"
bridge=sluice-br0
node_name=sluice-node

if [ "${1:-}" != --inner ]; then
  # -------------------------------------------------------------------------
  # Outer part: the host's state before, the bridge, the API server on it.
  say() { echo "with-node: $*" >&2; }
  need_node_packages
  ip route | grep -q "^${pod_cidr%/24}" && {
    say "$pod_cidr is already routed on this machine; set SLUICE_NODE_POD_CIDR to a free /24"
    exit 1
  }
  "$here/ensure-binaries.sh" --node >/dev/null
  [ -f "$root/.sluice/image.env" ] || {
    say "no image: run make image first (.sluice/image.env is missing)"
    exit 1
  }

  state=$(mktemp -d /tmp/sluice-node-host.XXXXXX)
  host_snapshot "$state/before"
  outer_done() {
    local status=$?
    ip link del "$bridge" 2>/dev/null || true
    host_restore "$state/before"
    host_snapshot "$state/after"
    if ! diff -u "$state/before" "$state/after" >"$state/diff"; then
      say "the host is not as it was before the node started:"
      cat "$state/diff" >&2
      [ "$status" -ne 0 ] || status=1
    fi
    rm -rf "$state"
    exit "$status"
  }
  trap outer_done EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM

  # The bridge exists before anything listens on its address; the CNI bridge
  # plugin takes it as it is.
  ip link add "$bridge" type bridge
  ip addr add "$node_ip/24" dev "$bridge"
  ip link set "$bridge" up

  export SLUICE_NODE_OUTER_KUBECONFIG="${SLUICE_TEST_KUBECONFIG:-}"
  # A cluster of its own: with-kube.sh starts one on the bridge address, with
  # what a node needs (service-account admission, the kubernetes Service's
  # endpoints), and calls back into this script.
  status=0
  env -u SLUICE_TEST_KUBECONFIG SLUICE_KUBE_ADDRESS="$node_ip" SLUICE_KUBE_FOR_NODE=1 \
    "$root/scripts/with-kube.sh" "$0" --inner "$@" || status=$?
  exit "$status"
fi

# ---------------------------------------------------------------------------
# Inner part: the node's processes, then the command.
shift
say() { echo "with-node: $*" >&2; }
started=$(date +%s.%N)
kubeconfig=$SLUICE_TEST_KUBECONFIG
pki=$SLUICE_TEST_KUBE_PKI
bins=$("$here/ensure-binaries.sh" --node)
bin_dir=$(dirname "$(sed -n 1p <<<"$bins")")
. "$here/versions.env"
runtime_dir="$bin_dir/containerd-$CONTAINERD_VERSION"

dir=$(mktemp -d /tmp/sluice-node.XXXXXX)
chmod 755 "$dir"
sock="$dir/containerd/containerd.sock"
pids=()
cleanup() {
  node_teardown
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

read -r kubelet_port kubelet_healthz scheduler_port manager_port proxy_healthz proxy_metrics < <("$root/scripts/free-ports.sh" 6)

write_node_configs
start() { # start NAME COMMAND...: runs it in the background, logging to $dir/NAME.log
  local name=$1
  shift
  "$@" >"$dir/$name.log" 2>&1 &
  pids+=("$name:$!")
}
fail() {
  say "$*"
  local log
  for log in "$dir"/*.log; do
    echo "--- $(basename "$log") (last 25 lines) ---" >&2
    tail -n 25 "$log" >&2 || true
  done
  exit 1
}
alive() { # alive NAME: its process still runs
  local entry
  for entry in "${pids[@]}"; do
    [ "${entry%%:*}" = "$1" ] || continue
    kill -0 "${entry#*:}" 2>/dev/null
    return
  done
  return 1
}

mkdir -p "$dir/containerd"
start containerd env PATH="$runtime_dir:$PATH" "$runtime_dir/containerd" --config "$dir/containerd.toml"
for _ in $(seq 100); do
  "$runtime_dir/ctr" --address "$sock" version >/dev/null 2>&1 && break
  alive containerd || fail "containerd exited"
  sleep 0.2
done
ctr_k8s() { "$runtime_dir/ctr" --address "$sock" -n k8s.io "$@"; }

# Images reach the node without a registry: the sandbox image made here and
# the Sluice image from make image, imported into containerd's k8s.io namespace.
pause_archive="$dir/pause.oci.tar"
oci_archive_of_binary "$bin_dir/pause" /pause "$SANDBOX_IMAGE" "$pause_archive"
ctr_k8s images import "$pause_archive" >"$dir/import.log" 2>&1 || fail "importing the sandbox image failed"
# shellcheck disable=SC1091 # written by scripts/image/build.sh
. "$root/.sluice/image.env"
ctr_k8s images import "$SLUICE_IMAGE_ARCHIVE" >>"$dir/import.log" 2>&1 || fail "importing $SLUICE_IMAGE failed"
SLUICE_NEXT_IMAGE='' SLUICE_NEXT_VERSION=''
if [ -f "$root/.sluice/image-next.env" ]; then
  # shellcheck disable=SC1091 # written by scripts/image/build-next.sh
  . "$root/.sluice/image-next.env"
  ctr_k8s images import "$SLUICE_NEXT_IMAGE_ARCHIVE" >>"$dir/import.log" 2>&1 ||
    fail "importing $SLUICE_NEXT_IMAGE failed"
fi

start kubelet "$bin_dir/kubelet" --config="$dir/kubelet.yaml" --kubeconfig="$kubeconfig" \
  --root-dir="$dir/kubelet" --hostname-override="$node_name" --node-ip="$node_ip" --v=1
start kube-scheduler "$bin_dir/kube-scheduler" --kubeconfig="$kubeconfig" \
  --authentication-kubeconfig="$kubeconfig" --authorization-kubeconfig="$kubeconfig" \
  --bind-address=127.0.0.1 --secure-port="$scheduler_port" --leader-elect=false --v=1
start kube-controller-manager "$bin_dir/kube-controller-manager" --kubeconfig="$kubeconfig" \
  --authentication-kubeconfig="$kubeconfig" --authorization-kubeconfig="$kubeconfig" \
  --bind-address=127.0.0.1 --secure-port="$manager_port" --leader-elect=false \
  --root-ca-file="$pki/ca.crt" --service-account-private-key-file="$pki/sa.key" \
  --use-service-account-credentials=false --controllers='*,-node-ipam-controller' --v=1
start kube-proxy "$bin_dir/kube-proxy" --config="$dir/kube-proxy.yaml" --v=1

api() { curl -s --max-time 5 --cacert "$pki/ca.crt" -H "Authorization: Bearer $(sed -n 's/^\s*token:\s*//p' "$kubeconfig")" "${server}$1"; }
server=$(sed -n 's/^\s*server:\s*//p' "$kubeconfig")
timeout=${SLUICE_NODE_START_TIMEOUT:-120}
deadline=$((SECONDS + timeout))
until api "/api/v1/nodes/$node_name" | grep -q '"type": *"Ready", *"status": *"True"' ||
  api "/api/v1/nodes/$node_name" | node -e '
    let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
      const ready = JSON.parse(s || "{}").status?.conditions?.find((c) => c.type === "Ready");
      process.exit(ready?.status === "True" ? 0 : 1);
    });'; do
  for p in containerd kubelet kube-scheduler kube-controller-manager kube-proxy; do
    alive "$p" || fail "$p exited"
  done
  [ $SECONDS -lt $deadline ] || fail "node $node_name not Ready after ${timeout}s"
  sleep 0.5
done
# Pods of a namespace need its `default` ServiceAccount (the controller
# manager makes it) before they can be created.
until api /api/v1/namespaces/default/serviceaccounts/default | grep -q '"name": *"default"'; do
  [ $SECONDS -lt $deadline ] || fail "the default ServiceAccount was not made after ${timeout}s"
  sleep 0.2
done

elapsed=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
say "node $node_name (kubelet v$KUBE_VERSION, containerd v$CONTAINERD_VERSION) Ready on $node_ip in ${elapsed}s; kubeconfig $kubeconfig"

export SLUICE_TEST_NODE_KUBECONFIG="$kubeconfig" SLUICE_TEST_NODE_HOST_IP="$node_ip" SLUICE_TEST_NODE_IMAGE="$SLUICE_IMAGE" \
  SLUICE_TEST_NODE_NEXT_IMAGE="$SLUICE_NEXT_IMAGE" SLUICE_TEST_NODE_NEXT_VERSION="$SLUICE_NEXT_VERSION" \
  SLUICE_TEST_NODE_KUBECTL="$bin_dir/kubectl" SLUICE_TEST_NODE_CTR="$runtime_dir/ctr --address $sock -n k8s.io" SLUICE_TEST_NODE_APISERVER_PID="$SLUICE_TEST_KUBE_APISERVER_PID"
if [ -n "${SLUICE_NODE_OUTER_KUBECONFIG:-}" ]; then
  export SLUICE_TEST_KUBECONFIG="$SLUICE_NODE_OUTER_KUBECONFIG"
else
  unset SLUICE_TEST_KUBECONFIG
fi
unset SLUICE_NODE_OUTER_KUBECONFIG SLUICE_TEST_KUBE_PKI SLUICE_TEST_KUBE_APISERVER_PID SLUICE_KUBE_ADDRESS SLUICE_KUBE_FOR_NODE
status=0
"$@" || status=$?
exit "$status"
