#!/usr/bin/env bash
# Builds helm from its Go module (helm.sh/helm/v3 on the module proxy; Debian bookworm does not package it) into
# a cache outside the repo, keyed by helm's version and the Go toolchain. Idempotent: a warm cache returns at once.
# Prints the path of the helm binary as its last line.
set -euo pipefail
HELM_VERSION=${HELM_VERSION:-v3.19.0}
command -v go >/dev/null || { echo "build-helm: Go is required to build helm $HELM_VERSION" >&2; exit 1; }
go_version=$(go env GOVERSION)
DIR=${TURNSTILE_HELM_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/turnstile/helm-$HELM_VERSION}
want="$HELM_VERSION $go_version"
if [ -x "$DIR/helm" ] && [ -f "$DIR/.stamp" ] && [ "$(cat "$DIR/.stamp")" = "$want" ]; then
  echo "$DIR/helm"; exit 0
fi
mkdir -p "$DIR"
start=$(date +%s)
echo "building helm $HELM_VERSION with $go_version into $DIR (cold: a few minutes)" >&2
# The version is a link-time variable in helm; without it `helm version` reports a development build.
GOTOOLCHAIN=local CGO_ENABLED=0 GOBIN="$DIR" GOFLAGS="-trimpath -buildvcs=false" \
  go install -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
  "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
"$DIR/helm" version --short | grep -qx "$HELM_VERSION+g.*\|$HELM_VERSION" \
  || { echo "build-helm: $DIR/helm reports $("$DIR/helm" version --short), not $HELM_VERSION" >&2; exit 1; }
echo "$want" > "$DIR/.stamp"
echo "helm built in $(( $(date +%s) - start ))s" >&2
echo "$DIR/helm"
