#!/usr/bin/env bash
# Makes the next release's source tree in DIR (an empty or missing folder): a
# shared clone of this checkout's HEAD with one commit on top, whose change is
# the version the code reports (shared/src/util/version.ts: '<v>' → '<v>-next').
# Prints that version. Used by scripts/image/build-next.sh (buildah) and by the
# k3s suite (Docker) to build the image an upgrade test rolls onto.
set -euo pipefail
dir=${1:?usage: scripts/image/next-release-tree.sh DIR}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
git clone -q --shared "$root" "$dir"
version_file="$dir/shared/src/util/version.ts"
version=$(sed -n "s/^export const SLUICE_VERSION = '\(.*\)';$/\1/p" "$version_file")
[ -n "$version" ] || {
  echo "next-release-tree: no SLUICE_VERSION line in shared/src/util/version.ts" >&2
  exit 1
}
sed -i "s/^export const SLUICE_VERSION = '.*';$/export const SLUICE_VERSION = '$version-next';/" "$version_file"
git -C "$dir" -c user.name=sluice -c user.email=build@sluice.invalid \
  commit -q -m "The next release (the full-cluster suite's upgrade test)" -- shared/src/util/version.ts
echo "$version-next"
