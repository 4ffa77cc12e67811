#!/usr/bin/env bash
# `npm run test:e2e`: the full-cluster suite on k3s in a container
# (e2e/k3s.e2e.test.ts), for machines with a Docker engine. Pods in k3s reach
# the host at the Docker bridge's gateway address: the test's Kafka broker gets
# a listener there (scripts/with-kafka.sh reads SLUICE_TEST_NODE_HOST_IP), and
# the suite's relays listen there too. kubectl is the one `make kube` builds.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
gateway=$(docker network inspect bridge --format '{{(index .IPAM.Config 0).Gateway}}')
[ -n "$gateway" ] || {
  echo "e2e-k3s: no gateway address on Docker's bridge network" >&2
  exit 1
}
bins=$("$root/scripts/kube/ensure-binaries.sh" --node)
export SLUICE_TEST_NODE_HOST_IP="$gateway"
export SLUICE_TEST_NODE_KUBECTL
SLUICE_TEST_NODE_KUBECTL="$(dirname "$(sed -n 1p <<<"$bins")")/kubectl"
export SLUICE_REQUIRE_DOCKER=1
exec "$root/scripts/with-postgres.sh" "$root/scripts/with-kafka.sh" \
  node --experimental-vm-modules "$root/node_modules/jest/bin/jest.js" e2e/k3s.e2e.test.ts "$@"
