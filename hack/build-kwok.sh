#!/usr/bin/env bash
# Builds kwok (simulated nodes: it plays the kubelet of Node objects we create) from Go modules into a cache
# outside the repo, ~/.cache/turnstile/kwok-v<version>/, with a stamp keyed by hack/kwok-tools/go.mod and go.sum.
# Its own module and its own cache: kwok pins other k8s.io/* versions than hack/k8s-tools, and rebuilding it must
# never invalidate the control plane's cache (nor the reverse). Idempotent; prints the binary directory last.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mod=$here/kwok-tools
V=$(awk '$1=="sigs.k8s.io/kwok" && $2 ~ /^v/ {print $2; exit}' "$mod/go.mod")
[ -n "$V" ] || { echo "build-kwok: cannot read the sigs.k8s.io/kwok version from $mod/go.mod" >&2; exit 1; }
BIN=${TURNSTILE_KWOK_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/turnstile/kwok-$V}
want="$(cat "$mod"/go.{mod,sum} | sha256sum | cut -c1-16) kwok"
if [ -f "$BIN/.stamp" ] && [ "$(cat "$BIN/.stamp")" = "$want" ]; then
  echo "$BIN"; exit 0
fi
command -v go >/dev/null || { echo "build-kwok: Go is required (>= 1.26) to build kwok" >&2; exit 1; }
mkdir -p "$BIN"
# Two builds at once (parallel test sessions, make -j) would write the same files: the second waits, then finds
# the stamp written by the first.
exec 9>"$BIN/.lock"
flock 9
if [ -f "$BIN/.stamp" ] && [ "$(cat "$BIN/.stamp")" = "$want" ]; then
  echo "$BIN"; exit 0
fi
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false"
start=$(date +%s)
echo "building kwok $V into $BIN" >&2
(cd "$mod" && go build -ldflags "-s -w" -o "$BIN/kwok" sigs.k8s.io/kwok/cmd/kwok)
"$BIN/kwok" --version >/dev/null || { echo "build-kwok: $BIN/kwok does not run" >&2; exit 1; }
echo "$want" > "$BIN/.stamp"
echo "kwok built in $(( $(date +%s) - start ))s" >&2
echo "$BIN"
