#!/usr/bin/env bash
# Builds Kueue's own scheduler-performance controller, minimalkueue (the Kueue core
# controllers and scheduler without webhooks or job integrations), from the Go module
# proxy into a cache outside the repo, and copies Kueue's CRDs beside it (they ship in
# the same module under config/components/crd/bases). Used only by bench/baseline.py
# (make bench-baseline), never by make test.
# Idempotent: a warm cache returns at once. Prints the cache directory as its last line:
#   <dir>/minimalkueue  and  <dir>/crds/*.yaml
set -euo pipefail
KUEUE_VERSION=${KUEUE_VERSION:-v0.17.0}
DIR=${TURNSTILE_KUEUE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/turnstile/kueue-$KUEUE_VERSION}
want="sigs.k8s.io/kueue@$KUEUE_VERSION minimalkueue crds"
if [ -f "$DIR/.stamp" ] && [ "$(cat "$DIR/.stamp")" = "$want" ]; then
  echo "$DIR"; exit 0
fi
command -v go >/dev/null || { echo "build-kueue: Go is required (>= 1.25) to build minimalkueue" >&2; exit 1; }
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false -mod=readonly"
start=$(date +%s)
# go mod download needs a module context to resolve nothing in; run it from a scratch dir.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
src=$(cd "$scratch" && go mod download -json "sigs.k8s.io/kueue@$KUEUE_VERSION" \
  | awk -F'"' '$2=="Dir" {print $4; exit}')
[ -n "$src" ] && [ -d "$src/test/performance/scheduler/minimalkueue" ] \
  || { echo "build-kueue: sigs.k8s.io/kueue@$KUEUE_VERSION has no test/performance/scheduler/minimalkueue" >&2; exit 1; }
mkdir -p "$DIR/crds"
echo "building minimalkueue $KUEUE_VERSION into $DIR (cold: ~10 minutes)" >&2
# Built inside the downloaded module so its own go.mod/go.sum (and replace directives) decide
# every dependency version, exactly as Kueue's perf runner builds it.
(cd "$src" && go build -ldflags "-s -w" -o "$DIR/minimalkueue" ./test/performance/scheduler/minimalkueue)
cp "$src"/config/components/crd/bases/*.yaml "$DIR/crds/"
chmod u+w "$DIR"/crds/*.yaml
"$DIR/minimalkueue" --help >/dev/null 2>&1 || [ $? -eq 2 ] \
  || { echo "build-kueue: $DIR/minimalkueue does not run" >&2; exit 1; }
echo "$want" > "$DIR/.stamp"
echo "minimalkueue built in $(( $(date +%s) - start ))s" >&2
echo "$DIR"
