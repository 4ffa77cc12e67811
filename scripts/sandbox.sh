#!/usr/bin/env bash
# A throw-away Kafka broker and PostgreSQL server on 127.0.0.1 for trying
# Sluice on one machine (`make sandbox`, README "A first pipeline"): the same
# servers `make test` starts (scripts/with-postgres.sh, scripts/with-kafka.sh),
# kept until Ctrl-C, then stopped and their data removed. Their addresses go
# to .sluice/sandbox.env, for `source` in another terminal:
#   KAFKA     the broker's PLAINTEXT bootstrap address (host:port)
#   PG_HOST, PG_PORT, PG_USER, PG_URL   the server (trust authentication:
#             any password is accepted), database `postgres`
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
env_file="${SLUICE_DATA_DIR:-$root/.sluice}/sandbox.env"
mkdir -p "$(dirname "$env_file")"
# Never reuse the servers of an enclosing test run.
unset SLUICE_TEST_DATABASE_URL SLUICE_TEST_KAFKA_BROKERS

# The holder is a Node process, not a shell loop: scripts/with-kafka.sh runs
# its command in the background, where a shell ignores Ctrl-C (SIGINT) for
# good, while Node restores the signal and ends; the wrappers then stop the
# broker and the server and remove their data.
export SANDBOX_ENV_FILE="$env_file"
command -v node >/dev/null || PATH="$("$root/scripts/node24.sh"):$PATH"
exec "$root/scripts/with-postgres.sh" "$root/scripts/with-kafka.sh" node -e '
  const { writeFileSync, rmSync } = require("node:fs");
  const file = process.env.SANDBOX_ENV_FILE;
  const kafka = process.env.SLUICE_TEST_KAFKA_BROKERS;
  const url = new URL(process.env.SLUICE_TEST_DATABASE_URL);
  writeFileSync(file, [
    `export KAFKA=${kafka}`,
    `export PG_HOST=${url.hostname} PG_PORT=${url.port} PG_USER=${url.username}`,
    `export PG_URL=${url}`,
  ].join("\n") + "\n");
  console.log(`sandbox: Kafka on ${kafka}, PostgreSQL at ${url}`);
  console.log(`sandbox: in another terminal: source ${file}   (Ctrl-C here stops both)`);
  const end = () => { rmSync(file, { force: true }); process.exit(0); };
  process.on("SIGINT", end);
  process.on("SIGTERM", end);
  setInterval(() => {}, 1 << 30);
'
