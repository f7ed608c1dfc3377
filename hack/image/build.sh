#!/usr/bin/env bash
# `make image`: Turnstile's image built with buildah (no container daemon) from the Dockerfile, on the base
# images hack/image/build-base.sh makes from Debian's packages. Layers are cached in buildah's storage, so a warm
# run with unchanged inputs takes seconds.
#   TURNSTILE_IMAGE       the tag (default localhost/turnstile:<version from pyproject.toml>)
#   TURNSTILE_IMAGE_BASE  "debian" (default: built here) or "public" (the Dockerfile's python:3.11-slim default,
#                         for machines that reach its registry)
#   TURNSTILE_IMAGE_SOURCE  the org.opencontainers.image.source label (default: git's origin when it is a URL)
# Prints the image name as its last line.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
command -v buildah >/dev/null || { echo "image: buildah is missing (apt-get install -y buildah debootstrap)" >&2; exit 1; }
version=$(python3 -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')
image=${TURNSTILE_IMAGE:-localhost/turnstile:$version}
args=(--build-arg "VERSION=$version")
# The source label is a URL: git's origin when it is one (git@host:path read as https://host/path), else the
# Dockerfile's default (a clone of a local path, as CI makes, has no URL to give).
source=${TURNSTILE_IMAGE_SOURCE:-$(git remote get-url origin 2>/dev/null || true)}
case $source in
  https://*) ;;
  git@*:*) source=${source#git@}; source="https://${source%%:*}/${source#*:}" ;;
  *) source="" ;;
esac
[ -z "$source" ] || args+=(--build-arg "SOURCE=${source%.git}")
# The builder's pip trusts what this machine's pip trusts (the CA of a TLS proxy on the way to the index), as
# a build secret: it is never written into a layer.
cert=${PIP_CERT:-$(python3 -m pip config get global.cert 2>/dev/null || true)}
[ -z "$cert" ] || [ ! -f "$cert" ] || args+=(--secret "id=pip-ca,src=$cert")
case ${TURNSTILE_IMAGE_BASE:=debian} in
  debian | public) ;;
  *) echo "image: TURNSTILE_IMAGE_BASE is debian or public, not '$TURNSTILE_IMAGE_BASE'" >&2; exit 1 ;;
esac
if [ "$TURNSTILE_IMAGE_BASE" = debian ]; then
  read -r base builder < <(bash hack/image/build-base.sh | tail -1)
  args+=(--pull=never --build-arg "BASE_IMAGE=$base" --build-arg "BUILDER_IMAGE=$builder")
fi
start=$(date +%s)
# chroot isolation: no daemon and no user namespaces needed; RUN steps use the host's network (pip, PyPI).
buildah build --isolation chroot --layers --force-rm --quiet "${args[@]}" -t "$image" -f Dockerfile . >&2
echo "image: $image built in $(( $(date +%s) - start ))s; $(buildah images --format '{{.Size}}' "$image" | head -1)" >&2
echo "$image"
