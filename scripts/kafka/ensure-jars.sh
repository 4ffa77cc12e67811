#!/usr/bin/env bash
# Copies the Apache Kafka server (kafka_2.13: the KRaft broker and controller,
# kafka.tools.StorageTool) and its runtime dependencies from Maven Central into
# a cache outside the checkout:
#   ${SLUICE_CACHE_DIR:-~/.cache/sluice}/kafka/<version>/lib/
# so every clone on this machine reuses them (Maven's own downloads stay in
# ~/.m2). Idempotent, under a lock so that concurrent runs fetch once. Installs
# Java 17 and Maven from Debian's packages when they are missing. Prints the lib
# directory. The version is scripts/kafka/versions.env's, or SLUICE_KAFKA_VERSION.
# See docs/testing-kafka.md.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/kafka/versions.env
. "$here/versions.env"
version=${SLUICE_KAFKA_VERSION:-$KAFKA_VERSION}
dir="${SLUICE_CACHE_DIR:-$HOME/.cache/sluice}/kafka/$version"
lib="$dir/lib"

die() {
  echo "ensure-jars: $*" >&2
  exit 1
}

# The major version of the java on PATH (17 for "17.0.15", 8 for "1.8.0_402").
java_major() {
  local v
  v=$(java -version 2>&1 | awk -F'"' '/version/ { print $2; exit }')
  v=${v#1.}
  echo "${v%%[.+-]*}"
}

apt_install() {
  local sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  echo "ensure-jars: installing $* from Debian's packages" >&2
  $sudo_cmd apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "$@" >&2
}

# Kafka 4 brokers need Java 17 or newer.
if ! command -v java >/dev/null || [ "$(java_major)" -lt 17 ]; then
  apt_install openjdk-17-jre-headless
  if ! command -v java >/dev/null || [ "$(java_major)" -lt 17 ]; then
    die "needs Java 17 or newer on PATH (java -version says: $(java -version 2>&1 | head -n1))"
  fi
fi

if [ -f "$lib/.complete" ]; then
  echo "$lib"
  exit 0
fi

command -v mvn >/dev/null || apt_install maven
command -v mvn >/dev/null || die "needs Maven (mvn) on PATH to fetch the Kafka jars"

mkdir -p "$dir"
exec 9>"$dir/.lock"
if ! flock -n 9; then
  echo "ensure-jars: another run holds $dir/.lock, waiting" >&2
  flock 9
fi
if [ -f "$lib/.complete" ]; then
  echo "$lib"
  exit 0
fi

start=$SECONDS
echo "ensure-jars: fetching Apache Kafka $version from Maven Central into $lib (once per machine)" >&2
rm -rf "$dir/.lib.tmp"
log="$dir/.maven.log"
# -B: no colours, no progress; the POM is only a dependency list (packaging pom).
if ! mvn -B -f "$here/pom.xml" -Dkafka.version="$version" \
  dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$dir/.lib.tmp" >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  die "Maven could not fetch org.apache.kafka:kafka_2.13:$version (full log: $log)"
fi
[ -f "$dir/.lib.tmp/kafka_2.13-$version.jar" ] || die "Maven ran but $dir/.lib.tmp has no kafka_2.13-$version.jar"
rm -rf "$lib"
mv "$dir/.lib.tmp" "$lib"
touch "$lib/.complete"
echo "ensure-jars: $(find "$lib" -name '*.jar' | wc -l) jars ($(du -sh "$lib" | cut -f1)) in $((SECONDS - start))s" >&2
echo "$lib"
