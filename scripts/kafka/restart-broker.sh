#!/usr/bin/env bash
# Stops the broker that scripts/with-kafka.sh started and starts it again on
# the same ports with the same data: what a broker restart looks like to the
# clients. For tests of the data plane across a restart.
#
#   scripts/kafka/restart-broker.sh <SLUICE_TEST_KAFKA_DIR> [seconds down]
#
# Stopping is a clean shutdown (TERM, as a rolling restart does), KILL after
# 30 s; the broker stays down for the given seconds (default 0), then the
# script returns once it answers a metadata request again (or fails after
# 90 s).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=${1:?usage: restart-broker.sh <SLUICE_TEST_KAFKA_DIR> [seconds down]}
down=${2:-0}
command -v node >/dev/null || PATH="$("$root/scripts/node24.sh"):$PATH"
[ -x "$dir/start-broker.sh" ] || {
  echo "restart-broker: $dir holds no broker started by scripts/with-kafka.sh" >&2
  exit 64
}

# Alive: the process exists and is not a zombie. One `ps` answers both, so a
# zombie reaped between two checks cannot read as alive (CI saw exactly that:
# `kill -0` passed on the zombie, `ps` then found nothing).
alive() {
  local stat
  [ -n "$1" ] || return 1
  stat=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [ -n "$stat" ] && [[ $stat != Z* ]]
}

pid=$(cat "$dir/broker.pid" 2>/dev/null || true)
if alive "$pid"; then
  # It may exit between the check and the signal: that is not an error.
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 300); do
    alive "$pid" || break
    sleep 0.1
  done
  if alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
fi
sleep "$down"

# Its own session: the new JVM must not die with the caller's process group.
setsid "$dir/start-broker.sh" </dev/null &
echo $! >"$dir/broker.pid"

address=$(cat "$dir/broker.address")
deadline=$((SECONDS + 90))
until node "$root/scripts/kafka/probe.mjs" "$address" >/dev/null 2>&1; do
  alive "$(cat "$dir/broker.pid")" || {
    echo "restart-broker: the broker exited; see $dir/server.log" >&2
    exit 1
  }
  [ $SECONDS -lt $deadline ] || {
    echo "restart-broker: no answer from $address after 90 s" >&2
    exit 1
  }
  sleep 0.2
done
