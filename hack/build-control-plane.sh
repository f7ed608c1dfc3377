#!/usr/bin/env bash
# Builds a real control plane from Go modules into a cache outside the repo:
#   etcd, kube-apiserver, kubectl, kube-scheduler (always) and kube-controller-manager
#   (unless TURNSTILE_SKIP_KCM=1), keyed by Kubernetes and etcd version.
# Idempotent: a warm cache (stamp matches go.mod/go.sum of both tools modules)
# returns at once. Prints the binary directory as its last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
KV=$(awk '$1=="k8s.io/kubernetes" && $2 ~ /^v/ {sub(/^v/,"",$2); print $2; exit}' "$here/k8s-tools/go.mod")
EV=$(awk '$1=="go.etcd.io/etcd/server/v3" && $2 ~ /^v/ {sub(/^v/,"",$2); print $2; exit}' "$here/etcd-tools/go.mod")
[ -n "$KV" ] && [ -n "$EV" ] || { echo "build-control-plane: cannot read versions from hack/*-tools/go.mod" >&2; exit 1; }
BIN=${TURNSTILE_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/turnstile/k8s-v$KV-etcd-v$EV}
targets=(kube-apiserver kubectl kube-scheduler)
[ "${TURNSTILE_SKIP_KCM:-0}" = 1 ] || targets+=(kube-controller-manager)
key=$(cat "$here"/k8s-tools/go.{mod,sum} "$here"/etcd-tools/go.{mod,sum} | sha256sum | cut -c1-16)
want="$key ${targets[*]} etcd"
if [ -f "$BIN/.stamp" ] && [ "$(cat "$BIN/.stamp")" = "$want" ]; then
  echo "$BIN"; exit 0
fi
command -v go >/dev/null || { echo "build-control-plane: Go is required (>= 1.26) to build kube-apiserver and etcd" >&2; exit 1; }
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false"
mkdir -p "$BIN"
start=$(date +%s)
echo "building etcd v$EV into $BIN" >&2
(cd "$here/etcd-tools" && go build -ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3)
minor=$(echo "$KV" | cut -d. -f2)
ldf="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldf="$ldf -X $p.gitVersion=v$KV -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
done
pkgs=()
for t in "${targets[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$t"); done
echo "building ${targets[*]} v$KV into $BIN (cold: tens of minutes)" >&2
(cd "$here/k8s-tools" && go build -ldflags "$ldf" -o "$BIN/" "${pkgs[@]}")
for t in etcd "${targets[@]}"; do "$BIN/$t" --version >/dev/null 2>&1 || [ "$t" = kubectl ] || { echo "build-control-plane: $BIN/$t does not run" >&2; exit 1; }; done
"$BIN/kubectl" version --client >/dev/null
echo "$want" > "$BIN/.stamp"
echo "control plane built in $(( $(date +%s) - start ))s" >&2
echo "$BIN"
