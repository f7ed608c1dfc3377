#!/usr/bin/env bash
# `make demo`: a local control plane with simulated nodes (kube-scheduler + kwok, hack/nodes/default.yaml),
# Turnstile in front of it, sample queues, four jobs: two GPU jobs fit, a CPU job spills over to spot nodes, a
# third GPU job waits with its reason; the first finishes after its run time and the waiting one starts. Nothing
# plays the kubelet by hand: the scheduler binds the pods and kwok runs them.
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
running() {  # running <job> <pods>: that many pods of the job are Running (bound by the scheduler, run by kwok)
  [ "$(kubectl get pods -l "job-name=$1" --field-selector=status.phase=Running -o name | wc -l)" -eq "$2" ]
}
pods_wide() { kubectl get pods -o wide --sort-by=.metadata.name; }

if $TURNSTILE cluster status >/dev/null 2>&1; then
  step "A demo cluster is already running: starting afresh"
  $TURNSTILE cluster down
fi
step "Starting kube-apiserver + etcd + kube-controller-manager + kube-scheduler, kwok's nodes, and Turnstile"
$TURNSTILE cluster up --with-turnstile --nodes default
kubectl get nodes -o custom-columns='NODE:.metadata.name,INSTANCE-TYPE:.metadata.labels.instance-type,CPU:.status.capacity.cpu,MEMORY:.status.capacity.memory,GPU:.status.capacity.nvidia\.com/gpu,TAINT:.spec.taints[*].key,READY:.status.conditions[?(@.type=="Ready")].status'

step "Applying the sample ResourceFlavors, ClusterQueue, LocalQueue and WorkloadPriorityClass"
kubectl apply --server-side -k manifests/samples/
kubectl get clusterqueues -o wide

step "Creating train-a (4 GPUs) and train-b (3 GPUs) on a queue with 8 GPUs (kubectl create, nothing else)"
kubectl create -f hack/demo-jobs.yaml -l 'demo-order=first'
two_started() { suspended train-a false && suspended train-b false; }
wait_for 30 "train-a and train-b to start" two_started
wait_for 60 "their pods to run" eval 'running train-a 4 && running train-b 3'
echo "Their pods, placed by kube-scheduler on the GPU nodes (flavor on-demand for CPU, default-flavor for GPUs):"
pods_wide

step "Creating preprocess (4 x 8 CPU): on-demand has 26 CPU left, so it is admitted on spot"
kubectl create -f hack/demo-jobs.yaml -l 'demo-order=cpu'
wait_for 30 "preprocess to start" suspended preprocess false
wait_for 60 "its pods to run" running preprocess 4
kubectl get job preprocess -o custom-columns='JOB:.metadata.name,NODE-SELECTOR:.spec.template.spec.nodeSelector,TOLERATIONS:.spec.template.spec.tolerations[*].key'
echo "Its pods run on the tainted spot nodes, which only the spot flavor's toleration lets them onto:"
kubectl get pods -l job-name=preprocess -o wide

step "Would train-c (4 GPUs) fit? Asking before creating it"
kubectl create --dry-run=client -o yaml -f hack/demo-jobs.yaml -l 'demo-order=second' \
  | $TURNSTILE fit -f - -n default --kubeconfig "$KUBECONFIG"

step "Creating train-c (4 GPUs): only 1 GPU is free"
kubectl create -f hack/demo-jobs.yaml -l 'demo-order=second'
sleep 2
kubectl get jobs -o custom-columns=JOB:.metadata.name,SUSPENDED:.spec.suspend,NODE-SELECTOR:.spec.template.spec.nodeSelector
kubectl get workloads.kueue.x-k8s.io

step "Why is train-c waiting?"
$TURNSTILE why train-c -n default --kubeconfig "$KUBECONFIG"
echo
echo "Kueue's visibility API (an aggregated API served by Turnstile), through the API server:"
kubectl get --raw /apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cluster-queue/pendingworkloads
echo
echo
kubectl get events --field-selector involvedObject.name=train-c -o custom-columns=REASON:.reason,MESSAGE:.message

step "train-a's pods succeed after their run time (annotation turnstile.x-k8s.io/run-time: 30s), so its 4 GPUs are free"
wait_for 90 "train-c to start" suspended train-c false
wait_for 60 "train-c's pods to run" running train-c 4
kubectl get jobs -o custom-columns=JOB:.metadata.name,SUSPENDED:.spec.suspend,COMPLETIONS:.status.succeeded
kubectl get workloads.kueue.x-k8s.io
$TURNSTILE queues --kubeconfig "$KUBECONFIG"
echo "Every admitted job's pods on nodes of its flavor (train-a's have Completed):"
pods_wide

step "Done"
cat <<MSG
Turnstile keeps running with the cluster. Try:
  export KUBECONFIG=$KUBECONFIG
  $TURNSTILE workloads -A
  $BIN_DIR/kubectl describe job train-b
  $BIN_DIR/kubectl get pods -o wide -w
Logs: .turnstile/logs/ and .turnstile/turnstile/turnstile.log.  Stop everything with: make demo-down
MSG
