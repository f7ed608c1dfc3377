#!/usr/bin/env bash
# Fetches the CRDs of third-party job kinds the tests install (RayJob, RayCluster) from their Go module with
# `go mod download` (the module proxy serves them; nothing is built), into a cache outside the repo:
#   ~/.cache/turnstile/third-party-crds/kuberay-ray-operator-v1.5.0/*.yaml
# Idempotent: a warm cache returns at once. Prints the CRD directory as its last line.
set -euo pipefail
MODULE=github.com/ray-project/kuberay/ray-operator
VERSION=v1.5.0
CRDS=(ray.io_rayjobs.yaml ray.io_rayclusters.yaml)
DIR=${TURNSTILE_THIRD_PARTY_CRDS:-${XDG_CACHE_HOME:-$HOME/.cache}/turnstile/third-party-crds/kuberay-ray-operator-$VERSION}
if [ -f "$DIR/.stamp" ] && [ "$(cat "$DIR/.stamp")" = "$MODULE@$VERSION ${CRDS[*]}" ]; then
  echo "$DIR"; exit 0
fi
command -v go >/dev/null || { echo "third-party-crds: Go is required to download $MODULE@$VERSION" >&2; exit 1; }
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
# The module's own go.mod is not needed to read files out of it; -json says where it was unpacked.
src=$(cd "$(mktemp -d)" && go mod download -json "$MODULE@$VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
mkdir -p "$DIR"
for crd in "${CRDS[@]}"; do
  [ -f "$src/config/crd/bases/$crd" ] || { echo "third-party-crds: $crd is not in $MODULE@$VERSION" >&2; exit 1; }
  install -m 0644 "$src/config/crd/bases/$crd" "$DIR/$crd"
done
echo "$MODULE@$VERSION ${CRDS[*]}" > "$DIR/.stamp"
echo "$DIR"
