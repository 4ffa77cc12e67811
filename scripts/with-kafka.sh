#!/usr/bin/env bash
# Runs a command with a real Apache Kafka broker reachable through
# SLUICE_TEST_KAFKA_BROKERS (host:port, PLAINTEXT). When that variable already
# names a reachable broker, it is used as is. Otherwise the Kafka server jars
# are fetched from Maven Central if missing (scripts/kafka/ensure-jars.sh,
# cached in ~/.cache/sluice/kafka/<version>/), and a throw-away single-node
# KRaft cluster (one JVM that is broker and controller, no ZooKeeper) is
# formatted under a temporary directory and started on free 127.0.0.1 ports;
# it is stopped and the directory removed when the command ends.
#
# The broker it starts also listens with SASL and TLS, for tests of those
# settings, and exports:
#   SLUICE_TEST_KAFKA_BROKERS                 PLAINTEXT listener
#   SLUICE_TEST_KAFKA_SASL_PLAINTEXT_BROKERS  SASL_PLAINTEXT (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)
#   SLUICE_TEST_KAFKA_SSL_BROKERS             SSL (server certificate only)
#   SLUICE_TEST_KAFKA_SASL_SSL_BROKERS        SASL_SSL (same mechanisms)
#   SLUICE_TEST_KAFKA_SASL_USERNAME / _PASSWORD  the test user of every mechanism
#   SLUICE_TEST_KAFKA_CA_FILE                 PEM CA that signed the broker's certificate
# Under scripts/with-node.sh (SLUICE_TEST_NODE_HOST_IP set), it also listens
# on the node's bridge, for the pods of the test node, and exports
#   SLUICE_TEST_KAFKA_NODE_BROKERS            PLAINTEXT listener on that address
# See docs/testing-kafka.md.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -gt 0 ] || {
  echo "usage: scripts/with-kafka.sh <command> [args...]" >&2
  exit 64
}
command -v node >/dev/null || PATH="$("$root/scripts/node24.sh"):$PATH"
probe="$root/scripts/kafka/probe.mjs"

if [ -n "${SLUICE_TEST_KAFKA_BROKERS:-}" ]; then
  if node "$probe" "$SLUICE_TEST_KAFKA_BROKERS" >/dev/null 2>&1; then
    exec "$@"
  fi
  echo "with-kafka: SLUICE_TEST_KAFKA_BROKERS=$SLUICE_TEST_KAFKA_BROKERS names no reachable broker; starting one" >&2
fi

started=$(date +%s.%N)
command -v openssl >/dev/null || {
  echo "with-kafka: needs openssl (apt-get install openssl)" >&2
  exit 1
}
lib=$("$root/scripts/kafka/ensure-jars.sh")
version=$(basename "$(dirname "$lib")")

# Five distinct free ports: PLAINTEXT, CONTROLLER, SASL_PLAINTEXT, SSL, SASL_SSL.
read -r port controller_port sasl_port ssl_port sasl_ssl_port node_port < <("$root/scripts/free-ports.sh" 6)

dir=$(mktemp -d /tmp/sluice-kafka.XXXXXX)
kafka_pid=""
cds_new=""
cds_new_ok=1 # cleared when the broker had to be killed (its archive may be cut short)
# True while $1 runs (an exited child stays a zombie, which `kill -0` still
# finds, until `wait` reaps it).
running() {
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [[ $state != Z* ]]
}
# TERM (a clean shutdown takes about a second), KILL whatever still runs 10 s
# later (the data is thrown away), and reap.
stop() {
  # A restart (scripts/kafka/restart-broker.sh) leaves the new JVM's pid here.
  [ -s "$dir/broker.pid" ] && kafka_pid=$(<"$dir/broker.pid")
  [ -n "$kafka_pid" ] || return 0
  kill "$kafka_pid" 2>/dev/null || true
  for _ in $(seq 100); do
    running "$kafka_pid" || break
    sleep 0.1
  done
  if running "$kafka_pid"; then
    kill -KILL "$kafka_pid" 2>/dev/null || true
    cds_new_ok=""
  fi
  wait "$kafka_pid" 2>/dev/null || true
  kafka_pid=""
  rm -f "$dir/broker.pid"
}
cleanup() {
  stop
  # The class archive is written when the JVM exits normally; keep the first.
  if [ -n "${cds_new:-}" ]; then
    if [ -n "$cds_new_ok" ] && [ -s "$cds_new" ] && [ ! -f "$cds" ]; then mv -f "$cds_new" "$cds"; fi
    rm -f "$cds_new"
  fi
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail() {
  echo "with-kafka: $*" >&2
  for log in "$dir/format.log" "$dir/server.log"; do
    [ -s "$log" ] || continue
    echo "--- $(basename "$log") (last 60 lines) ---" >&2
    tail -n 60 "$log" >&2 || true
  done
  exit 1
}

# TLS: a CA and the broker's certificate for 127.0.0.1 and localhost, in the
# PEM form Kafka reads directly (private key then certificate, one file).
pki="$dir/pki"
mkdir -m 700 "$pki"
(
  cd "$pki"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
    -subj "/CN=sluice-test-kafka-ca" -keyout ca.key -out ca.crt \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
    -keyout broker.key -out broker.csr
  openssl x509 -req -in broker.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -out broker.crt \
    -extfile <(printf '%s\n' "basicConstraints=critical,CA:FALSE" \
      "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" \
      "subjectAltName=IP:127.0.0.1,DNS:localhost")
  openssl pkcs8 -topk8 -nocrypt -in broker.key -out broker.pk8
  cat broker.pk8 broker.crt >broker.pem
) >"$dir/openssl.log" 2>&1 || {
  cat "$dir/openssl.log" >&2
  exit 1
}

user=sluice
password=$(openssl rand -hex 16)
# Pods of the test node reach the host on its bridge address only.
node_listener="" node_advertised="" node_protocol=""
if [ -n "${SLUICE_TEST_NODE_HOST_IP:-}" ]; then
  node_listener=",NODE://$SLUICE_TEST_NODE_HOST_IP:$node_port"
  node_advertised=",NODE://$SLUICE_TEST_NODE_HOST_IP:$node_port"
  node_protocol=",NODE:PLAINTEXT"
fi
cat >"$dir/server.properties" <<EOF
# A single-node KRaft cluster: this process is the broker and the controller.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$controller_port
controller.listener.names=CONTROLLER
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller_port,SASL_PLAINTEXT://127.0.0.1:$sasl_port,SSL://127.0.0.1:$ssl_port,SASL_SSL://127.0.0.1:$sasl_ssl_port$node_listener
advertised.listeners=PLAINTEXT://127.0.0.1:$port,SASL_PLAINTEXT://127.0.0.1:$sasl_port,SSL://127.0.0.1:$ssl_port,SASL_SSL://127.0.0.1:$sasl_ssl_port$node_advertised
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL$node_protocol
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data

# One broker: every internal topic with one replica, and few partitions so that
# the first consumer group or transaction does not wait for 50 of them.
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
share.coordinator.state.topic.num.partitions=1
# Consumer groups form at once instead of waiting 3 s for more members.
group.initial.rebalance.delay.ms=0

# SASL: PLAIN users are listed here, SCRAM users are written into the metadata
# log by the storage format (--add-scram below).
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$user="$password";
listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$user="$password";
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;

# TLS for the SSL and SASL_SSL listeners (no client certificates asked).
ssl.keystore.type=PEM
ssl.keystore.location=$pki/broker.pem
EOF

# Kafka 4 runs the JVM with G1, a 1 GiB heap and both JIT compilers; a test
# broker needs far less, and starts in half the time with the quick JIT only
# (C1) on this 2-core machine. SLUICE_KAFKA_JVM_OPTS replaces these options
# (bench/ wants the full JIT: docs/testing-kafka.md).
read -r -a jvm_opts <<<"${SLUICE_KAFKA_JVM_OPTS:--Xms128m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1}"
java_cmd=(java "${jvm_opts[@]}" -XX:-UsePerfData -Djava.awt.headless=true
  -Dlog4j2.configurationFile="$root/scripts/kafka/log4j2.properties" -cp "$lib/*")

# Class data sharing: the first run on a machine records the broker's classes
# into an archive beside the jars when it stops (-XX:ArchiveClassesAtExit),
# later runs map it instead of loading and verifying ~6000 classes again (a
# start takes about half as long). One archive per Java build: another JVM
# would refuse it, and then simply runs without.
java_version=$(java -version 2>&1 | awk -F'"' '/version/ { print $2; exit }')
cds="$(dirname "$lib")/broker-java-$java_version.jsa"
format_opts=()
if [ -f "$cds" ]; then
  broker_opts=(-XX:SharedArchiveFile="$cds")
  format_opts=("${broker_opts[@]}") # most of its classes are the broker's
else
  cds_new="$(dirname "$lib")/.broker-java-$java_version.$$.jsa"
  broker_opts=(-XX:ArchiveClassesAtExit="$cds_new")
fi

cluster_id=$(openssl rand 16 | base64 | tr '+/' '-_' | tr -d '=')
"${java_cmd[@]}" "${format_opts[@]}" kafka.tools.StorageTool format --cluster-id="$cluster_id" \
  --config "$dir/server.properties" \
  --add-scram "SCRAM-SHA-256=[name=$user,password=$password]" \
  --add-scram "SCRAM-SHA-512=[name=$user,password=$password]" >"$dir/format.log" 2>&1 ||
  fail "formatting the storage failed"

# The broker's command line is kept as a script beside its data, so that
# scripts/kafka/restart-broker.sh can stop and start the same broker (same
# ports, same log) in the middle of a test; the pid file names the JVM.
{
  echo '#!/usr/bin/env bash'
  printf 'exec'
  printf ' %q' "${java_cmd[@]}" "${broker_opts[@]}" kafka.Kafka "$dir/server.properties"
  printf ' >>%q 2>&1\n' "$dir/server.log"
} >"$dir/start-broker.sh"
chmod +x "$dir/start-broker.sh"
echo "127.0.0.1:$port" >"$dir/broker.address"
"$dir/start-broker.sh" &
kafka_pid=$!
echo "$kafka_pid" >"$dir/broker.pid"

timeout=${SLUICE_KAFKA_START_TIMEOUT:-90}
deadline=$((SECONDS + timeout))
until info=$(node "$probe" "127.0.0.1:$port" 2>/dev/null); do
  running "$kafka_pid" || fail "the broker exited"
  [ $SECONDS -lt $deadline ] || fail "the broker answered no metadata request after ${timeout}s"
  sleep 0.2
done

elapsed=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
echo "with-kafka: Apache Kafka $version (KRaft) ready on 127.0.0.1:$port in ${elapsed}s ($info); SASL on :$sasl_port, SSL on :$ssl_port, SASL_SSL on :$sasl_ssl_port; logs in $dir" >&2

export SLUICE_TEST_KAFKA_BROKERS="127.0.0.1:$port"
export SLUICE_TEST_KAFKA_SASL_PLAINTEXT_BROKERS="127.0.0.1:$sasl_port"
export SLUICE_TEST_KAFKA_SSL_BROKERS="127.0.0.1:$ssl_port"
export SLUICE_TEST_KAFKA_SASL_SSL_BROKERS="127.0.0.1:$sasl_ssl_port"
export SLUICE_TEST_KAFKA_SASL_USERNAME="$user"
export SLUICE_TEST_KAFKA_SASL_PASSWORD="$password"
export SLUICE_TEST_KAFKA_CA_FILE="$pki/ca.crt"
[ -z "$node_listener" ] || export SLUICE_TEST_KAFKA_NODE_BROKERS="$SLUICE_TEST_NODE_HOST_IP:$node_port"
export SLUICE_TEST_KAFKA_DIR="$dir" # for scripts/kafka/restart-broker.sh

# The command runs as a child (stdin kept) so that a TERM or INT sent to this
# script reaches it at once and the broker is stopped after it: bash would
# otherwise run the traps only once a foreground command has finished.
"$@" <&0 &
cmd_pid=$!
trap 'kill -TERM "$cmd_pid" 2>/dev/null || true' TERM
trap 'kill -INT "$cmd_pid" 2>/dev/null || true' INT
status=0
while :; do
  if wait "$cmd_pid"; then
    status=0
  else
    status=$? # the command's status, or 128+N when a signal interrupted `wait`
  fi
  running "$cmd_pid" || break
done
exit "$status"
