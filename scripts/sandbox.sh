#!/usr/bin/env bash
# Throw-away servers on 127.0.0.1 for trying Sluice on one machine (`make
# sandbox`, README "A first pipeline" and "A MariaDB source through an SSH
# bastion"): the Kafka broker, PostgreSQL and MariaDB servers `make test`
# starts (scripts/with-postgres.sh, with-kafka.sh, with-mariadb.sh), and an
# OpenSSH bastion (Debian's sshd, installed when missing) with a host key and
# a user key generated for the run, forwarding to 127.0.0.1. Kept until
# Ctrl-C, then stopped and their data and keys removed. Their addresses go to
# .sluice/sandbox.env, for `source` in another terminal:
#   KAFKA     the broker's PLAINTEXT bootstrap address (host:port)
#   PG_HOST, PG_PORT, PG_USER, PG_URL   the server (trust authentication:
#             any password is accepted), database `postgres`
#   MARIADB_HOST, MARIADB_PORT, MARIADB_USER, MARIADB_PASSWORD, MARIADB_DATABASE
#             the MariaDB server (binary log in ROW format, a user with every
#             privilege), and MARIADB_URL
#   SSH_HOST, SSH_PORT, SSH_USER   the bastion; SSH_KEY_B64 the user's
#             private key (Ed25519, base64, as `ssh_private_key` takes it);
#             SSH_HOST_KEY the bastion's public host key (`ssh_host_key`)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
env_file="${SLUICE_DATA_DIR:-$root/.sluice}/sandbox.env"
mkdir -p "$(dirname "$env_file")"
# Never reuse the servers of an enclosing test run.
unset SLUICE_TEST_DATABASE_URL SLUICE_TEST_KAFKA_BROKERS SLUICE_TEST_MYSQL_URL
command -v node >/dev/null || PATH="$("$root/scripts/node24.sh"):$PATH"

# --- the SSH bastion ---------------------------------------------------------------
sshd=/usr/sbin/sshd
if [ ! -x "$sshd" ]; then
  echo "sandbox: installing openssh-server from Debian's packages" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq >&2
  # policy-rc.d keeps the package from starting a system-wide server.
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends openssh-server >&2
fi
ssh_dir=$(mktemp -d /tmp/sluice-sandbox-ssh.XXXXXX)
sshd_pid=""
cleanup() {
  if [ -n "$sshd_pid" ]; then
    kill "$sshd_pid" 2>/dev/null || true
    wait "$sshd_pid" 2>/dev/null || true
  fi
  rm -rf "$ssh_dir"
  rm -f "$env_file"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ssh-keygen -q -t ed25519 -N '' -C sandbox-bastion -f "$ssh_dir/host_ed25519"
ssh-keygen -q -t ed25519 -N '' -C sandbox-user -f "$ssh_dir/user_ed25519"
cp "$ssh_dir/user_ed25519.pub" "$ssh_dir/authorized_keys"
ssh_port=$("$root/scripts/free-ports.sh")
# The bastion logs in whoever runs the sandbox (an sshd started by another user can log in no one else).
ssh_user=$(id -un)
cat >"$ssh_dir/sshd_config" <<CONF
Port $ssh_port
ListenAddress 127.0.0.1
HostKey $ssh_dir/host_ed25519
PidFile $ssh_dir/sshd.pid
AuthorizedKeysFile $ssh_dir/authorized_keys
StrictModes no
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
AllowTcpForwarding yes
PermitOpen any
X11Forwarding no
CONF
# sshd's privilege separation directory (the package creates it at boot).
[ "$(id -u)" -eq 0 ] && mkdir -p /run/sshd
"$sshd" -D -e -f "$ssh_dir/sshd_config" 2>"$ssh_dir/sshd.log" &
sshd_pid=$!
for _ in $(seq 50); do
  grep -q 'Server listening' "$ssh_dir/sshd.log" 2>/dev/null && break
  kill -0 "$sshd_pid" 2>/dev/null || break
  sleep 0.1
done
grep -q 'Server listening' "$ssh_dir/sshd.log" || {
  echo "sandbox: the SSH bastion did not start:" >&2
  cat "$ssh_dir/sshd.log" >&2
  exit 1
}

# --- the servers, and what to source ---------------------------------------------------
# The holder is a Node process, not a shell loop: scripts/with-kafka.sh runs
# its command in the background, where a shell ignores Ctrl-C (SIGINT) for
# good, while Node restores the signal and ends; the wrappers then stop the
# servers and remove their data.
export SANDBOX_ENV_FILE="$env_file" SANDBOX_SSH_PORT="$ssh_port" SANDBOX_SSH_USER="$ssh_user"
SANDBOX_SSH_KEY_B64=$(base64 -w0 "$ssh_dir/user_ed25519")
SANDBOX_SSH_HOST_KEY=$(cut -d' ' -f1,2 "$ssh_dir/host_ed25519.pub")
export SANDBOX_SSH_KEY_B64 SANDBOX_SSH_HOST_KEY
"$root/scripts/with-postgres.sh" "$root/scripts/with-mariadb.sh" "$root/scripts/with-kafka.sh" node -e '
  const { writeFileSync, rmSync } = require("node:fs");
  const e = process.env;
  const file = e.SANDBOX_ENV_FILE;
  const kafka = e.SLUICE_TEST_KAFKA_BROKERS;
  const url = new URL(e.SLUICE_TEST_DATABASE_URL);
  const my = new URL(e.SLUICE_TEST_MYSQL_URL);
  writeFileSync(file, [
    `export KAFKA=${kafka}`,
    `export PG_HOST=${url.hostname} PG_PORT=${url.port} PG_USER=${url.username}`,
    `export PG_URL=${url}`,
    `export MARIADB_HOST=${my.hostname} MARIADB_PORT=${my.port} MARIADB_USER=${my.username} MARIADB_PASSWORD=${my.password} MARIADB_DATABASE=${my.pathname.slice(1)}`,
    `export MARIADB_URL=${my}`,
    `export SSH_HOST=127.0.0.1 SSH_PORT=${e.SANDBOX_SSH_PORT} SSH_USER=${e.SANDBOX_SSH_USER}`,
    `export SSH_KEY_B64=${e.SANDBOX_SSH_KEY_B64}`,
    `export SSH_HOST_KEY="${e.SANDBOX_SSH_HOST_KEY}"`,
  ].join("\n") + "\n", { mode: 0o600 });
  console.log(`sandbox: Kafka on ${kafka}, PostgreSQL at ${url}`);
  console.log(`sandbox: MariaDB at ${my.hostname}:${my.port} (user ${my.username}, database ${my.pathname.slice(1)})`);
  console.log(`sandbox: SSH bastion at 127.0.0.1:${e.SANDBOX_SSH_PORT} (user ${e.SANDBOX_SSH_USER}, key in SSH_KEY_B64)`);
  console.log(`sandbox: in another terminal: source ${file}   (Ctrl-C here stops them all)`);
  const end = () => { rmSync(file, { force: true }); process.exit(0); };
  process.on("SIGINT", end);
  process.on("SIGTERM", end);
  setInterval(() => {}, 1 << 30);
'
