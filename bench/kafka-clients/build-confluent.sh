#!/usr/bin/env bash
# Builds @confluentinc/kafka-javascript (a native addon over librdkafka) for the
# Node.js 24 that runs the benches, and prints the directory of the built
# package. Only `npm run bench:kafka-clients` calls this, never `make test`.
#
# The package is not a dependency of the workspace: its install script, which
# `npm install` would run, downloads a prebuilt
# binary from GitHub and otherwise compiles librdkafka with `--install-deps`,
# which downloads the sources of OpenSSL, zlib, zstd, … too; neither host is
# reachable from these machines, and the compile (4 minutes here) would run
# inside every `npm install`. Here the npm registry's tarball of the same
# version (it bundles librdkafka's source) is unpacked into a cache, and librdkafka is
# built against Debian's OpenSSL and zlib (CKJS_LINKING=dynamic: no downloads),
# with the headers of the Node.js that runs the bench (--nodedir).
# Cache: ~/.cache/sluice/confluent-kafka-javascript/<version>-node<ABI>/package
set -euo pipefail
# The version measured in bench/README.md ("Kafka clients").
version=${SLUICE_CONFLUENT_VERSION:-1.10.1}
node_dir=$(dirname "$(dirname "$(command -v node)")")
abi=$(node -p process.versions.modules)
cache="${SLUICE_CACHE_DIR:-$HOME/.cache/sluice}/confluent-kafka-javascript/$version-node$abi"
pkg="$cache/package"
if [ -f "$pkg/build/Release/confluent-kafka-javascript.node" ]; then
  echo "$pkg"
  exit 0
fi
[ -f "$node_dir/include/node/node_api.h" ] || {
  echo "build-confluent: no Node.js headers under $node_dir/include/node" >&2
  exit 1
}
for tool in make g++ python3; do
  command -v "$tool" >/dev/null || {
    echo "build-confluent: needs $tool (apt-get install build-essential python3)" >&2
    exit 1
  }
done
[ -f /usr/include/openssl/ssl.h ] && [ -f /usr/include/zlib.h ] || {
  echo "build-confluent: needs libssl-dev and zlib1g-dev (apt-get install libssl-dev zlib1g-dev)" >&2
  exit 1
}
rm -rf "$cache"
mkdir -p "$cache"
log="$cache/build.log"
(
  cd "$cache"
  npm pack --silent "@confluentinc/kafka-javascript@$version" >/dev/null
  tar xzf confluentinc-kafka-javascript-"$version".tgz
  cd package
  # Two jobs, not `make -j` unbounded: the machines are shared.
  sed -i 's/"make", "-j",/"make", "-j2",/' deps/librdkafka.gyp
  npm install --ignore-scripts --omit=dev --no-package-lock --no-audit --no-fund --silent
  gyp="$(dirname "$(command -v npm)")/../lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js"
  [ -f "$gyp" ] || gyp=$(npm root -g)/npm/node_modules/node-gyp/bin/node-gyp.js
  export CKJS_LINKING=dynamic BUILD_LIBRDKAFKA=1
  # librdkafka's configure first: gyp's build would otherwise ask for its config.h before it exists.
  node util/configure.js
  node "$gyp" rebuild --nodedir="$node_dir" -j 2
) >"$log" 2>&1 || {
  echo "build-confluent: building failed; last lines of $log:" >&2
  tail -n 30 "$log" >&2
  exit 1
}
echo "$pkg"
