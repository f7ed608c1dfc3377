#!/usr/bin/env bash
# Turnstile's base images, made from Debian's packages alone (no container registry needed):
#   localhost/turnstile-base:<release>-<key>          debootstrap --variant=minbase + python3, pruned: the runtime
#   localhost/turnstile-builder-base:<release>-<key>  the same plus python3-venv (pip), for the builder stage only
# The release is the machine's (/etc/os-release) unless TURNSTILE_BASE_RELEASE says otherwise. The root
# filesystems are cached as tarballs under ~/.cache/turnstile/image/, keyed by this script, the release, the
# mirror and the architecture: a warm run only imports them if buildah's storage lost the images, and returns
# at once when it has them. Debian's updates are taken only when the key changes: rm -rf the cache to refresh.
# Prints the two image names (runtime, builder) as its last line.
set -euo pipefail
. /etc/os-release
RELEASE=${TURNSTILE_BASE_RELEASE:-$VERSION_CODENAME}
MIRROR=${TURNSTILE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
ARCH=$(dpkg --print-architecture)
PYTHON=3.11 # the project's version (pyproject's mypy/ruff target); the release must ship it as python3
for tool in buildah debootstrap; do
  command -v "$tool" >/dev/null || { echo "build-base: $tool is missing (apt-get install -y buildah debootstrap)" >&2; exit 1; }
done
key=$({ cat "$0"; echo "$RELEASE $MIRROR $ARCH"; } | sha256sum | cut -c1-12)
CACHE=${TURNSTILE_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/turnstile/image}/base-$RELEASE-$key
RUNTIME=localhost/turnstile-base:$RELEASE-$key
BUILDER=localhost/turnstile-builder-base:$RELEASE-$key

have() { buildah inspect --type image "$1" >/dev/null 2>&1; }
if have "$RUNTIME" && have "$BUILDER"; then
  echo "$RUNTIME $BUILDER"; exit 0
fi
# One build at a time per key (worktrees and CI share the cache); a second one waits, then finds it done.
mkdir -p "$(dirname "$CACHE")"
exec 9>"$CACHE.lock"
flock 9
if have "$RUNTIME" && have "$BUILDER"; then
  echo "$RUNTIME $BUILDER"; exit 0
fi

start=$(date +%s)
if [ ! -f "$CACHE/.stamp" ]; then
  rm -rf "$CACHE" && mkdir -p "$CACHE"
  root=$CACHE/rootfs
  echo "build-base: debootstrap $RELEASE (minbase + python3) into $root" >&2
  debootstrap --variant=minbase --include=python3,python3-venv "$RELEASE" "$root" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 \
    || { tail -20 "$CACHE/debootstrap.log" >&2; echo "build-base: debootstrap failed (log: $CACHE/debootstrap.log)" >&2; exit 1; }
  got=$(chroot "$root" python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  [ "$got" = "$PYTHON" ] || { echo "build-base: $RELEASE ships Python $got, Turnstile needs $PYTHON" >&2; exit 1; }
  # Neither image needs the package lists, downloaded .debs, manuals, translations or logs. Copyright files stay.
  prune() {
    rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/var/cache/debconf/* "$1"/var/log/* \
      "$1"/usr/share/man "$1"/usr/share/info "$1"/usr/share/locale "$1"/usr/share/lintian "$1"/etc/hostname
    find "$1"/usr/share/doc -mindepth 1 ! -type d ! -name copyright -delete
    : > "$1"/etc/resolv.conf # the container runtime provides it
  }
  prune "$root"
  tar -C "$root" --numeric-owner -cf "$CACHE/builder.tar" .
  # The runtime: no pip (python3-venv carries its wheels), and no package manager: nothing installs at run time.
  chroot "$root" dpkg --purge python3-venv python3.11-venv python3-pip-whl python3-setuptools-whl >/dev/null
  chroot "$root" dpkg --purge --force-remove-essential --force-depends apt libapt-pkg6.0 debconf perl-base \
    >/dev/null 2>&1
  prune "$root"
  if chroot "$root" python3 -m pip --version >/dev/null 2>&1; then echo "build-base: pip left in the runtime" >&2; exit 1; fi
  chroot "$root" python3 -c 'import asyncio, ssl, json, sqlite3, zoneinfo' \
    || { echo "build-base: the pruned runtime lost part of the standard library" >&2; exit 1; }
  tar -C "$root" --numeric-owner -cf "$CACHE/runtime.tar" .
  rm -rf "$root"
  echo "$RELEASE $key" > "$CACHE/.stamp"
fi

import() { # tarball, image name
  local ctr
  ctr=$(buildah from scratch)
  buildah add --quiet "$ctr" "$1" / >/dev/null
  buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd python3 \
    --label org.opencontainers.image.base.name="debian:$RELEASE-minbase" --label turnstile.base.key="$key" "$ctr"
  buildah commit --quiet --rm "$ctr" "$2" >/dev/null
}
import "$CACHE/runtime.tar" "$RUNTIME"
import "$CACHE/builder.tar" "$BUILDER"
echo "build-base: $RUNTIME and $BUILDER ready after $(( $(date +%s) - start ))s" >&2
echo "$RUNTIME $BUILDER"
