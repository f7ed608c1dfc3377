#!/usr/bin/env bash
# Builds hack/loadgen (the soak's stand-in for kube-apiserver calling the webhooks; standard library only) into a
# cache outside the repo, ~/.cache/turnstile/loadgen-<hash of its sources>/. Idempotent; prints the binary's path.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$here/loadgen
key=$(cat "$src"/go.mod "$src"/*.go | sha256sum | cut -c1-16)
BIN=${XDG_CACHE_HOME:-$HOME/.cache}/turnstile/loadgen-$key
if [ -x "$BIN/loadgen" ]; then
  echo "$BIN/loadgen"; exit 0
fi
command -v go >/dev/null || { echo "build-loadgen: Go is required to build hack/loadgen" >&2; exit 1; }
mkdir -p "$BIN"
exec 9>"$BIN/.lock"
flock 9
if [ ! -x "$BIN/loadgen" ]; then
  export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false"
  (cd "$src" && go build -ldflags "-s -w" -o "$BIN/loadgen.tmp" .)
  mv "$BIN/loadgen.tmp" "$BIN/loadgen"
fi
echo "$BIN/loadgen"
