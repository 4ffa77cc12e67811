#!/usr/bin/env bash
# Runs a command with a real Kubernetes API server reachable through the
# kubeconfig file named by SLUICE_TEST_KUBECONFIG (the "envtest" approach: a
# kube-apiserver and an etcd, no nodes, no controller-manager, no scheduler).
# When that variable already names a reachable API server, it is used as is.
# Otherwise the binaries are built from Go modules if missing
# (scripts/kube/ensure-binaries.sh, cached in ~/.cache/sluice/kube/), and a
# throw-away etcd and kube-apiserver are started on free 127.0.0.1 ports with
# certificates and data under a temporary directory; both are stopped and the
# directory removed when the command ends. See docs/testing-kubernetes.md.
#
# scripts/with-node.sh starts its own through this script, with
#   SLUICE_KUBE_ADDRESS=<ip>   the address to listen on and advertise instead of
#                              127.0.0.1 (the node's bridge, which pods reach)
#   SLUICE_KUBE_FOR_NODE=1     what a cluster with nodes needs: service-account
#                              admission, the kubernetes Service's endpoints, and
#                              SLUICE_TEST_KUBE_PKI (the CA and the service-account
#                              key, for the controller manager) and
#                              SLUICE_TEST_KUBE_APISERVER_PID (to cut it off in a test)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -gt 0 ] || {
  echo "usage: scripts/with-kube.sh <command> [args...]" >&2
  exit 64
}

# Prints the HTTP status of GET <server>/readyz for the kubeconfig in $1 (000 when
# nothing answers). Uses the kubeconfig's bearer token when it has one.
kubeconfig_readyz() {
  local server token
  server=$(sed -n 's/^\s*server:\s*//p' "$1" | head -n1 | tr -d '"'"'")
  token=$(sed -n 's/^\s*token:\s*//p' "$1" | head -n1 | tr -d '"'"'")
  [ -n "$server" ] || {
    echo 000
    return
  }
  curl -sk -o /dev/null -w '%{http_code}' --max-time 5 ${token:+-H "Authorization: Bearer $token"} "$server/readyz" || true
}

if [ -n "${SLUICE_TEST_KUBECONFIG:-}" ] && [ -f "$SLUICE_TEST_KUBECONFIG" ]; then
  case $(kubeconfig_readyz "$SLUICE_TEST_KUBECONFIG") in
    # 401/403: an API server that answers but wants other credentials than
    # curl can take from the file (client certificates, exec plugins).
    200 | 401 | 403) exec "$@" ;;
  esac
  echo "with-kube: SLUICE_TEST_KUBECONFIG=$SLUICE_TEST_KUBECONFIG names no reachable API server; starting one" >&2
fi

started=$(date +%s.%N)
address=${SLUICE_KUBE_ADDRESS:-127.0.0.1}
for_node=${SLUICE_KUBE_FOR_NODE:-}
command -v node >/dev/null || PATH="$("$root/scripts/node24.sh"):$PATH"
for tool in openssl curl; do
  command -v "$tool" >/dev/null || {
    echo "with-kube: needs $tool (apt-get install $tool)" >&2
    exit 1
  }
done

bins=$("$root/scripts/kube/ensure-binaries.sh")
apiserver_bin=$(sed -n 1p <<<"$bins")
etcd_bin=$(sed -n 2p <<<"$bins")

# Three distinct free ports: etcd client, etcd peer, API server.
read -r etcd_port peer_port api_port < <("$root/scripts/free-ports.sh" 3)

dir=$(mktemp -d /tmp/sluice-kube.XXXXXX)
etcd_pid=""
apiserver_pid=""
# True while $1 runs (an exited child stays a zombie, which `kill -0` still
# finds, until `wait` reaps it).
running() {
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [[ $state != Z* ]]
}
# One at a time, the API server first: it hangs in its shutdown while etcd is
# already gone. TERM, KILL whatever still runs 5 s later (the data is thrown
# away), and reap.
stop() {
  local pid
  for pid in $apiserver_pid $etcd_pid; do
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do
      running "$pid" || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  apiserver_pid=""
  etcd_pid=""
}
cleanup() {
  stop
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Certificates: a CA, the API server's serving certificate for 127.0.0.1 and
# localhost (signed by the CA, which is also the client CA), and the
# service-account token signing key pair.
pki="$dir/pki"
mkdir -m 700 "$pki"
(
  cd "$pki"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
    -subj "/CN=sluice-test-ca" -keyout ca.key -out ca.crt \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=kube-apiserver" \
    -keyout apiserver.key -out apiserver.csr
  openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -out apiserver.crt \
    -extfile <(printf '%s\n' "basicConstraints=critical,CA:FALSE" \
      "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" \
      "subjectAltName=IP:127.0.0.1,IP:$address,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.0.0.1")
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out sa.key
  openssl pkey -in sa.key -pubout -out sa.pub
) >"$dir/openssl.log" 2>&1 || {
  cat "$dir/openssl.log" >&2
  exit 1
}

token=$(openssl rand -hex 32)
printf '%s,sluice-test-admin,sluice-test-admin,"system:masters"\n' "$token" >"$pki/tokens.csv"

# Without nodes, no controller manager makes the ServiceAccounts pods need,
# and no pod can reach the API server through the kubernetes Service.
node_flags=(--disable-admission-plugins=ServiceAccount --endpoint-reconciler-type=none)
# With a node: logs and exec reach its kubelet at the node's address (its
# name resolves nowhere).
[ -z "$for_node" ] || node_flags=(--kubelet-preferred-address-types=InternalIP)

"$etcd_bin" --name=sluice-test --data-dir="$dir/etcd" \
  --listen-client-urls="http://127.0.0.1:$etcd_port" --advertise-client-urls="http://127.0.0.1:$etcd_port" \
  --listen-peer-urls="http://127.0.0.1:$peer_port" --initial-advertise-peer-urls="http://127.0.0.1:$peer_port" \
  --initial-cluster="sluice-test=http://127.0.0.1:$peer_port" --initial-cluster-state=new \
  --unsafe-no-fsync --log-level=warn >"$dir/etcd.log" 2>&1 &
etcd_pid=$!

"$apiserver_bin" \
  --etcd-servers="http://127.0.0.1:$etcd_port" \
  --bind-address="$address" --advertise-address="$address" --secure-port="$api_port" \
  --cert-dir="$pki" --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
  --client-ca-file="$pki/ca.crt" \
  --token-auth-file="$pki/tokens.csv" \
  --authorization-mode=RBAC \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
  --service-cluster-ip-range=10.0.0.0/24 \
  --allow-privileged=true \
  "${node_flags[@]}" \
  --v=1 >"$dir/apiserver.log" 2>&1 &
apiserver_pid=$!

fail() {
  echo "with-kube: $*" >&2
  echo "--- etcd log (last 30 lines) ---" >&2
  tail -n 30 "$dir/etcd.log" >&2 || true
  echo "--- kube-apiserver log (last 60 lines) ---" >&2
  tail -n 60 "$dir/apiserver.log" >&2 || true
  exit 1
}

server="https://$address:$api_port"
api() { # api METHOD PATH [BODY]: prints the HTTP status
  curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert "$pki/ca.crt" \
    -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -X "$1" ${3:+--data "$3"} "$server$2" || true
}

timeout=${SLUICE_KUBE_START_TIMEOUT:-90}
deadline=$((SECONDS + timeout))
until [ "$(api GET /readyz)" = 200 ]; do
  kill -0 "$etcd_pid" 2>/dev/null || fail "etcd exited"
  kill -0 "$apiserver_pid" 2>/dev/null || fail "kube-apiserver exited"
  [ $SECONDS -lt $deadline ] || fail "kube-apiserver not ready after ${timeout}s"
  sleep 0.2
done

# The API server's own bootstrap controller creates `default` (and kube-system,
# kube-public); wait a little for it, then create it if it is still missing.
for _ in $(seq 50); do
  [ "$(api GET /api/v1/namespaces/default)" = 200 ] && break
  sleep 0.1
done
if [ "$(api GET /api/v1/namespaces/default)" != 200 ]; then
  status=$(api POST /api/v1/namespaces '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"}}')
  [ "$status" = 201 ] || [ "$status" = 409 ] || fail "could not create namespace default (HTTP $status)"
fi

kubeconfig="$dir/kubeconfig"
cat >"$kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: sluice-test
    cluster:
      server: $server
      certificate-authority-data: $(base64 -w0 <"$pki/ca.crt")
users:
  - name: sluice-test-admin
    user:
      token: $token
contexts:
  - name: sluice-test
    context:
      cluster: sluice-test
      user: sluice-test-admin
current-context: sluice-test
EOF
chmod 600 "$kubeconfig"

elapsed=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
echo "with-kube: kube-apiserver v$("$apiserver_bin" --version | sed 's/.* v//') (etcd $("$etcd_bin" --version | sed -n 's/^etcd Version: //p')) ready on $server in ${elapsed}s; kubeconfig $kubeconfig" >&2

export SLUICE_TEST_KUBECONFIG="$kubeconfig"
[ -z "$for_node" ] || export SLUICE_TEST_KUBE_PKI="$pki" SLUICE_TEST_KUBE_APISERVER_PID="$apiserver_pid"
"$@"
