#!/usr/bin/env bash
# Runs a command with a real PostgreSQL server reachable through
# SLUICE_TEST_DATABASE_URL. When that variable already names a reachable server,
# it is used as is. Otherwise Debian's PostgreSQL is installed if missing, and a
# throw-away cluster is created under a temporary directory and started on a free
# 127.0.0.1 port; it is stopped and removed when the command ends. It runs with
# wal_level=logical and room for 32 replication slots and WAL senders, for the
# PostgreSQL CDC source (logical replication, pgoutput).
set -euo pipefail

if [ -n "${SLUICE_TEST_DATABASE_URL:-}" ] && command -v pg_isready >/dev/null && pg_isready -q -d "$SLUICE_TEST_DATABASE_URL"; then
  exec "$@"
fi

pg_bindir() {
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [ -x "$d/initdb" ] && { echo "$d"; return 0; }
  done
  return 1
}

if ! bindir=$(pg_bindir); then
  echo "with-postgres: installing PostgreSQL from Debian's packages" >&2
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq postgresql >&2
  bindir=$(pg_bindir)
fi

# PostgreSQL refuses to run as root: use the package's `postgres` account then.
run_as=()
if [ "$(id -u)" -eq 0 ]; then run_as=(runuser -u postgres --); fi

port=$("$(dirname "${BASH_SOURCE[0]}")/free-ports.sh")
dir=$(mktemp -d /tmp/sluice-pg.XXXXXX)
chmod 755 "$dir"
[ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
cleanup() {
  "${run_as[@]}" "$bindir/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM

"${run_as[@]}" "$bindir/initdb" -D "$dir/data" -U sluice --auth=trust -E UTF8 --no-locale >/dev/null
"${run_as[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
  -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c wal_level=logical -c max_replication_slots=32 -c max_wal_senders=32 -c max_connections=200" >/dev/null
echo "with-postgres: PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port" >&2

export SLUICE_TEST_DATABASE_URL="postgres://sluice@127.0.0.1:$port/postgres"
"$@"
