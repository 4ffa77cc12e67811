# Shared by the scripts of scripts/image/ (sourced, not run): the cache
# directory, a logger, and the installation of Debian's packages they need.
# shellcheck shell=bash

image_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The build context: this checkout, or SLUICE_IMAGE_CONTEXT (build-next.sh's clone).
image_root=${SLUICE_IMAGE_CONTEXT:-$(cd "$image_here/../.." && pwd)}
# shellcheck source=scripts/image/versions.env
. "$image_here/versions.env"
# shellcheck disable=SC2034 # read by the scripts that source this file
image_cache="${SLUICE_CACHE_DIR:-$HOME/.cache/sluice}/image"
# Under sudo, PATH may be sudo's secure_path: find Node 24 again.
command -v node >/dev/null || PATH="$("$image_root/scripts/node24.sh"):$PATH"

say() { echo "image: $*" >&2; }
die() {
  echo "image: $*" >&2
  exit 1
}

# need_packages CMD=PACKAGE...: installs, from Debian's packages, those whose
# command is missing (the way scripts/with-mariadb.sh installs its server).
need_packages() {
  local pair missing=()
  for pair in "$@"; do
    command -v "${pair%%=*}" >/dev/null || [ -x "/usr/sbin/${pair%%=*}" ] || missing+=("${pair#*=}")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null || die "needs ${missing[*]} (no apt-get here to install them)"
  local sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  say "installing ${missing[*]} from Debian's packages"
  $sudo_cmd apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}
