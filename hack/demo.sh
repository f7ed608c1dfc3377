#!/usr/bin/env bash
# `make demo`: a local control plane, the sample queues, and (as the pieces land) Turnstile admitting a job.
set -euo pipefail
cd "$(dirname "$0")/.."
TURNSTILE=.venv/bin/turnstile
BIN_DIR=${TURNSTILE_BIN_DIR:-$(bash hack/build-control-plane.sh)}
export KUBECONFIG=$PWD/.turnstile/kubeconfig
kubectl() { "$BIN_DIR/kubectl" "$@"; }
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "Starting a local kube-apiserver + etcd (state in .turnstile/)"
$TURNSTILE cluster up

step "Applying the sample ResourceFlavors, ClusterQueue, LocalQueue and WorkloadPriorityClass"
kubectl apply --server-side -k manifests/samples/

step "What the cluster now has"
kubectl get resourceflavors
kubectl get clusterqueues -o wide
kubectl get localqueues -A
kubectl get workloadpriorityclasses

step "Next"
cat <<'MSG'
The queues exist. Once Turnstile's webhook and reconciler run in front of this API server, a Job labelled
kueue.x-k8s.io/queue-name=user-queue is suspended on creation, gets a Workload, and starts only when the
ClusterQueue has quota for all of its pods.

The cluster keeps running: export KUBECONFIG=$PWD/.turnstile/kubeconfig to use it, `make demo-down` to stop it.
MSG
