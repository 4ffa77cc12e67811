#!/usr/bin/env bash
# Runs a command with a real MariaDB server reachable through
# SLUICE_TEST_MYSQL_URL (mysql://user:password@127.0.0.1:port/), for the
# pre-flight checks of MYSQL_SOURCE and MARIADB_SOURCE (MariaDB speaks the
# MySQL protocol). When that variable already names a reachable server, it is
# used as is. Otherwise Debian's mariadb-server is installed if missing, and a
# throw-away server is initialised under a temporary directory and started on
# a free 127.0.0.1 port with the binary log in ROW format (what change data
# capture needs); it is stopped and removed when the command ends.
#
# It exports:
#   SLUICE_TEST_MYSQL_URL   a user `sluice` with every privilege (password
#                           random, per run), database `sluice_test`
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -gt 0 ] || {
  echo "usage: scripts/with-mariadb.sh <command> [args...]" >&2
  exit 64
}
command -v node >/dev/null || PATH="$("$root/scripts/node24.sh"):$PATH"

reachable() {
  node -e '
    const u = new URL(process.argv[1]);
    const s = require("net").connect(Number(u.port || 3306), u.hostname);
    s.setTimeout(2000, () => process.exit(1));
    s.on("connect", () => process.exit(0)).on("error", () => process.exit(1));' "$1"
}
if [ -n "${SLUICE_TEST_MYSQL_URL:-}" ] && reachable "$SLUICE_TEST_MYSQL_URL"; then
  exec "$@"
fi

if ! command -v mariadbd >/dev/null && [ ! -x /usr/sbin/mariadbd ]; then
  echo "with-mariadb: installing MariaDB from Debian's packages" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq >&2
  # policy-rc.d keeps the package from starting a system-wide server.
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends mariadb-server >&2
fi
mariadbd=$(command -v mariadbd || echo /usr/sbin/mariadbd)

port=$("$root/scripts/free-ports.sh")
dir=$(mktemp -d /tmp/sluice-mariadb.XXXXXX)
pid=""
cleanup() {
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The server runs as the invoking user (root needs --user=root said aloud).
user_opt=()
[ "$(id -u)" -eq 0 ] && user_opt=(--user=root)
mariadb-install-db --no-defaults "${user_opt[@]}" --datadir="$dir/data" --auth-root-authentication-method=socket \
  --skip-test-db >"$dir/install.log" 2>&1 || {
  cat "$dir/install.log" >&2
  exit 1
}
"$mariadbd" --no-defaults "${user_opt[@]}" --datadir="$dir/data" --socket="$dir/mysqld.sock" \
  --pid-file="$dir/mysqld.pid" --bind-address=127.0.0.1 --port="$port" \
  --log-bin="$dir/binlog" --binlog-format=ROW --binlog-row-image=FULL --server-id=1 \
  --innodb-buffer-pool-size=32M --innodb-log-file-size=16M --skip-name-resolve \
  --log-error="$dir/error.log" --open-files-limit=1024 >"$dir/server.out" 2>&1 &
pid=$!

deadline=$((SECONDS + 60))
until mariadb --no-defaults --socket="$dir/mysqld.sock" -uroot -e 'select 1' >/dev/null 2>&1; do
  kill -0 "$pid" 2>/dev/null || {
    echo "with-mariadb: the server exited" >&2
    tail -n 40 "$dir/error.log" >&2 || true
    exit 1
  }
  [ $SECONDS -lt $deadline ] || {
    echo "with-mariadb: no answer after 60s" >&2
    exit 1
  }
  sleep 0.2
done

password=$(node -e 'console.log(require("crypto").randomBytes(12).toString("hex"))')
mariadb --no-defaults --socket="$dir/mysqld.sock" -uroot <<SQL
create user 'sluice'@'127.0.0.1' identified by '$password';
grant all privileges on *.* to 'sluice'@'127.0.0.1' with grant option;
create database sluice_test;
SQL
version=$("$mariadbd" --version | awk '{print $3}')
echo "with-mariadb: MariaDB $version on 127.0.0.1:$port" >&2

export SLUICE_TEST_MYSQL_URL="mysql://sluice:$password@127.0.0.1:$port/sluice_test"
"$@" <&0 &
cmd_pid=$!
trap 'kill -TERM "$cmd_pid" 2>/dev/null || true' TERM
trap 'kill -INT "$cmd_pid" 2>/dev/null || true' INT
status=0
while :; do
  if wait "$cmd_pid"; then status=0; else status=$?; fi
  kill -0 "$cmd_pid" 2>/dev/null || break
done
exit "$status"
