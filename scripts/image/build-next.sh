#!/usr/bin/env bash
# The image of "the next release", for the node suite's `helm upgrade` test
# (e2e/support/full-cluster-suite.ts): built from a commit made on top of HEAD
# in a temporary clone (scripts/image/next-release-tree.sh; the checkout is not
# touched), whose one change is the version the code reports. The upgrade then
# really rolls different code: the gateway answers the new version at
# /api/config/deployment, and every pod's image ID changes, not only its tag.
#
# The build is this checkout's scripts/image/build.sh, on the clone: buildah
# reuses the dependency layers (the package files are the same), so only the
# TypeScript build and the layers after it are made again (docs/image.md).
# Writes .sluice/image-next.env (SLUICE_NEXT_IMAGE, SLUICE_NEXT_IMAGE_ARCHIVE,
# SLUICE_NEXT_VERSION), which scripts/with-node.sh imports into the node
# beside the image itself.
set -euo pipefail
[ "$(id -u)" -eq 0 ] || exec sudo --preserve-env=PATH,SLUICE_CACHE_DIR,NODE_IMAGE,CONTAINERD_ADDRESS "$0" "$@"
# shellcheck source=scripts/image/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

work=$(mktemp -d /tmp/sluice-next-image.XXXXXX)
trap 'rm -rf "$work"' EXIT
clone="$work/tree"
next_version=$("$image_here/next-release-tree.sh" "$clone")
# The plain version tag (localhost/sluice:<v>) stays on the checkout's image.
SLUICE_IMAGE_CONTEXT="$clone" SLUICE_IMAGE_VERSION_TAG=0 "$image_here/build.sh"
# shellcheck disable=SC1091 # written by build.sh in the clone
. "$clone/.sluice/image.env"
mkdir -p "$image_root/.sluice"
printf 'SLUICE_NEXT_IMAGE=%s\nSLUICE_NEXT_IMAGE_ARCHIVE=%s\nSLUICE_NEXT_VERSION=%s\n' \
  "$SLUICE_IMAGE" "$SLUICE_IMAGE_ARCHIVE" "$next_version" >"$image_root/.sluice/image-next.env"
say "the next release's image: $SLUICE_IMAGE (reports version $next_version)"
