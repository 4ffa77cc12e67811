#!/usr/bin/env bash
# Prints N (default 1) distinct free TCP ports of 127.0.0.1, space-separated:
# each is bound at the same time as the others, so no two are the same, then
# released for the caller's server to take.
set -euo pipefail
count=${1:-1}
exec node -e '
  const net = require("net");
  const servers = Array.from({ length: Number(process.argv[1]) }, () => net.createServer());
  let n = 0;
  for (const s of servers)
    s.listen(0, "127.0.0.1", () => {
      if (++n === servers.length) {
        console.log(servers.map((x) => x.address().port).join(" "));
        for (const x of servers) x.close();
      }
    });' "$count"
