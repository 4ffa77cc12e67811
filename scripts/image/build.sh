#!/usr/bin/env bash
# `make image`: builds the Sluice image from the repository's Dockerfile with
# buildah (rootful, chroot isolation: no Docker engine, no registry), writes it
# as an OCI archive and loads it into the local stores. See docs/image.md.
#
#   NODE_IMAGE   the Dockerfile's base; unset: the local base that
#                scripts/image/ensure-base.sh makes (localhost/sluice-node:24).
#   SLUICE_IMAGE_VERSION_TAG=0  no localhost/sluice:<version> tag (build-next.sh:
#                the tag stays on the checkout's own image).
#   SLUICE_IMAGE_CONTEXT  the tree to build (default: this checkout).
#
# The image is tagged localhost/sluice:<version>-<git short sha> (with
# `-dirty` when the build context differs from the commit) and
# localhost/sluice:<version>. It ends up
#   - in containers-storage (buildah's and podman's store): `podman run`;
#   - as an OCI archive, ${SLUICE_CACHE_DIR:-~/.cache/sluice}/image/sluice-<tag>.oci.tar
#     (the three newest are kept, and the store keeps their tags only);
#   - in containerd's `k8s.io` namespace when a containerd answers on
#     $CONTAINERD_ADDRESS (default /run/containerd/containerd.sock).
# Writes .sluice/image.env (SLUICE_IMAGE, SLUICE_IMAGE_ARCHIVE) for the
# smoke test, e2e/image.test.ts. Builds are cached between runs (buildah's
# --layers: `npm ci` is redone only when a package file changes).
set -euo pipefail
[ "$(id -u)" -eq 0 ] || exec sudo --preserve-env=PATH,SLUICE_CACHE_DIR,NODE_IMAGE,CONTAINERD_ADDRESS,SLUICE_IMAGE_VERSION_TAG,SLUICE_IMAGE_CONTEXT "$0" "$@"
# shellcheck source=scripts/image/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

need_packages buildah=buildah podman=podman
base="${NODE_IMAGE:-$("$image_here/ensure-base.sh")}"

cd "$image_root"
version=$(node -p 'require("./package.json").version')
tag="$version-$(git rev-parse --short HEAD)"
# The build context is the working tree: say so when it is not the commit.
context_paths=(Dockerfile .dockerignore package.json package-lock.json tsconfig.json tsconfig.base.json
  shared dataplane gateway operator e2e/package.json bench/package.json scripts/patch-kafka-client.mjs)
[ -z "$(git status --porcelain -- "${context_paths[@]}")" ] || tag="$tag-dirty"
name="localhost/sluice:$tag"
mkdir -p "$image_cache"
archive="$image_cache/sluice-$tag.oci.tar"

# When this machine reaches the npm registry through a TLS-intercepting proxy,
# its npm trusts an extra CA file: the build's `npm ci` gets the same file,
# through npm's global config (/usr/local/etc/npmrc, a mount of the RUN steps,
# so neither enters the image).
mounts=()
cafile=$(npm config get cafile 2>/dev/null || true)
[ -n "$cafile" ] && [ "$cafile" != null ] || cafile="${NODE_EXTRA_CA_CERTS:-}"
if [ -n "$cafile" ] && [ -s "$cafile" ]; then
  npmetc=$(mktemp -d)
  trap 'rm -rf "$npmetc"' EXIT
  cp "$cafile" "$npmetc/ca.crt"
  echo "cafile=/usr/local/etc/ca.crt" >"$npmetc/npmrc"
  mounts=(--volume "$npmetc:/usr/local/etc:ro")
fi

start=$SECONDS
say "building $name from the Dockerfile on $base"
tags=(-t "$name")
[ "${SLUICE_IMAGE_VERSION_TAG:-1}" = 0 ] || tags+=(-t "localhost/sluice:$version")
buildah bud --layers --isolation chroot "${mounts[@]}" --build-arg "NODE_IMAGE=$base" \
  "${tags[@]}" -f Dockerfile . >&2
built=$((SECONDS - start))

rm -f "$archive.tmp"
buildah push --quiet "$name" "oci-archive:$archive.tmp:$name" >/dev/null
mv "$archive.tmp" "$archive"
# shellcheck disable=SC2012 # names made above, no odd characters
ls -t "$image_cache"/sluice-*.oci.tar | tail -n +4 | xargs -r rm -f
# The store keeps the tags whose archive is kept; `buildah rmi --prune` then
# frees what only the others used (docs/image.md).
for t in $(podman images --format '{{.Repository}}:{{.Tag}}' localhost/sluice); do
  [ "$t" = "localhost/sluice:$version" ] || [ -e "$image_cache/sluice-${t#localhost/sluice:}.oci.tar" ] ||
    buildah rmi "$t" >/dev/null 2>&1 || true
done

sock="${CONTAINERD_ADDRESS:-/run/containerd/containerd.sock}"
if command -v ctr >/dev/null && [ -S "$sock" ] && ctr --address "$sock" version >/dev/null 2>&1; then
  ctr --address "$sock" -n k8s.io images import "$archive" >&2
  say "imported into containerd ($sock), namespace k8s.io"
fi

mkdir -p .sluice
printf 'SLUICE_IMAGE=%s\nSLUICE_IMAGE_ARCHIVE=%s\n' "$name" "$archive" >.sluice/image.env
say "built $name in $built s; archive $archive ($(du -m "$archive" | cut -f1) MB)"
echo "$name"
