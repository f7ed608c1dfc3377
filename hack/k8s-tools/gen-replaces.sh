#!/usr/bin/env bash
# Regenerates go.mod of this tools module for a Kubernetes version: the require
# line plus one replace per staging module, read from the go.mod that the Go
# module proxy serves for k8s.io/kubernetes (so the list is never hand-kept).
# Run it only when moving to another Kubernetes version; commit go.mod/go.sum.
set -euo pipefail
KV=${KUBE_VERSION:-1.36.3}
SV=0.${KV#1.}
MODFILE=$(cd "$(mktemp -d)" && go mod download -json "k8s.io/kubernetes@v$KV" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
cd "$(dirname "$0")"
rm -f go.mod go.sum
go mod init turnstile.invalid/k8s-tools
go mod edit -go=1.26.0
for t in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
  go mod edit -tool="k8s.io/kubernetes/cmd/$t"
done
go mod edit -require="k8s.io/kubernetes@v$KV"
sed -n 's|^[[:space:]]*\(k8s\.io/[A-Za-z0-9._-]*\)[[:space:]]*=>[[:space:]]*\./staging/src/.*|\1|p' "$MODFILE" |
  while read -r m; do go mod edit -replace="$m=$m@v$SV"; done
go mod tidy
