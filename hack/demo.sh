#!/usr/bin/env bash
# `make demo`: a local control plane, Turnstile in front of it, sample queues, three jobs: two fit, one waits
# with its reason; one finishes and the waiting one starts.
set -euo pipefail
cd "$(dirname "$0")/.."
TURNSTILE=.venv/bin/turnstile
BIN_DIR=${TURNSTILE_BIN_DIR:-$(bash hack/build-control-plane.sh)}
export KUBECONFIG=$PWD/.turnstile/kubeconfig
kubectl() { "$BIN_DIR/kubectl" "$@"; }
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
wait_for() {  # wait_for <seconds> <description> <command...>
  local limit=$1 what=$2; shift 2
  for _ in $(seq $((limit * 5))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  echo "timed out waiting for $what" >&2; return 1
}
suspended() { [ "$(kubectl get job "$1" -o jsonpath='{.spec.suspend}')" = "$2" ]; }
finish() {  # act as the kubelet: the job's pods succeed, the Job controller completes the Job
  for pod in $(kubectl get pods -l "job-name=$1" -o name); do
    kubectl patch "$pod" --subresource=status --type=merge -p '{"status":{"phase":"Succeeded"}}' >/dev/null
  done
}

if $TURNSTILE cluster status >/dev/null 2>&1; then
  step "A demo cluster is already running: starting afresh"
  $TURNSTILE cluster down
fi
step "Starting kube-apiserver + etcd + kube-controller-manager, and Turnstile in front of them"
$TURNSTILE cluster up --with-turnstile

step "Applying the sample ResourceFlavors, ClusterQueue, LocalQueue and WorkloadPriorityClass"
kubectl apply --server-side -k manifests/samples/
kubectl get clusterqueues -o wide

step "Creating train-a (4 GPUs) and train-b (3 GPUs) on a queue with 8 GPUs (kubectl create, nothing else)"
kubectl create -f hack/demo-jobs.yaml -l 'demo-order=first'
two_started() { suspended train-a false && suspended train-b false; }
wait_for 30 "train-a and train-b to start" two_started

step "Creating train-c (4 GPUs): only 1 GPU is free"
kubectl create -f hack/demo-jobs.yaml -l 'demo-order=second'
sleep 2
kubectl get jobs -o custom-columns=JOB:.metadata.name,SUSPENDED:.spec.suspend,NODE-SELECTOR:.spec.template.spec.nodeSelector
kubectl get workloads.kueue.x-k8s.io

step "Why is train-c waiting?"
$TURNSTILE why train-c -n default --kubeconfig "$KUBECONFIG"
echo
kubectl get events --field-selector involvedObject.name=train-c -o custom-columns=REASON:.reason,MESSAGE:.message

step "train-a finishes (the demo plays the kubelet: its pods succeed), so its 4 GPUs are free"
pods_of_a() { [ "$(kubectl get pods -l job-name=train-a -o name | wc -l)" -eq 4 ]; }
wait_for 30 "train-a's pods" pods_of_a
finish train-a
wait_for 60 "train-c to start" suspended train-c false
kubectl get jobs -o custom-columns=JOB:.metadata.name,SUSPENDED:.spec.suspend,COMPLETIONS:.status.succeeded
kubectl get workloads.kueue.x-k8s.io
$TURNSTILE queues --kubeconfig "$KUBECONFIG"

step "Done"
cat <<MSG
Turnstile keeps running with the cluster. Try:
  export KUBECONFIG=$KUBECONFIG
  $TURNSTILE workloads -A
  $BIN_DIR/kubectl describe job train-b
Logs: .turnstile/logs/ and .turnstile/turnstile/turnstile.log.  Stop everything with: make demo-down
MSG
