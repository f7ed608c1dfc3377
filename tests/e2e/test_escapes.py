"""No job runs beyond its quota, whatever an ordinary user does (issue 17, one test per escape that was found).

Every test acts as ``alice``, who has the built-in ``edit`` ClusterRole in her namespace (and Turnstile's
aggregated roles), through kubectl with her own client certificate. While she acts, ``invariants.Watch`` samples
the API server every ~150 ms (never Turnstile's cache) and each test ends by asserting that at no sample did a
job have more live pods, or pods asking for more, than its Workload's admission, nor a queue hold more than its
quota. With no nodes in the local cluster, "running" is: unsuspended, with pods created by the real Job
controller (Pending, unscheduled), whose requests are what the API server stored (LimitRange defaults included).

The module runs its own Turnstile (the package's is stopped meanwhile): only the ``batch/job`` integration (row
10) and ``namespaceOptInLabel`` (only namespaces labelled ``kueue.openshift.io/managed=true`` are managed, the
namespace-policy case); every test namespace here is labelled so, except where a test says otherwise.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.invariants import Watch, live
from tests.e2e.kube import (
    JSON,
    apply,
    cluster_queue,
    condition,
    eventually,
    flavor,
    get,
    job,
    local_queue,
    maybe_get,
    priority_class,
    started,
    waiting,
    workload_of,
)
from tests.e2e.users import User, install_user_roles
from webhook.jobs.naming import job_workload_name
from webhook.local.client import ApiError, LocalClient
from webhook.local.cluster import LocalCluster
from webhook.local.turnstile import PROBE_NAMESPACE, LocalTurnstile

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

OPT_IN = "kueue.openshift.io/managed"
WORKLOAD = "workloads.kueue.x-k8s.io"


@pytest.fixture(scope="module")
def escapes_turnstile(
    cluster: LocalCluster, turnstile: LocalTurnstile, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalTurnstile]:
    install_user_roles(cluster)
    turnstile.stop()
    cluster.kubectl("create", "namespace", PROBE_NAMESPACE, check=False)
    cluster.kubectl("label", "namespace", PROBE_NAMESPACE, f"{OPT_IN}=true", "--overwrite")
    local = LocalTurnstile(
        cluster,
        Path(tmp_path_factory.mktemp("turnstile-escapes")),
        config={"integrations": {"frameworks": ["batch/job"]}, "namespaceOptInLabel": OPT_IN},
    )
    local.start()
    try:
        yield local
    finally:
        local.stop()
        if local.process is not None and local.process.returncode not in (0, None, -15):
            print(local.log_file.read_text()[-5000:])
        turnstile.start()  # the package's other modules need theirs


@dataclass
class Env:
    cluster: LocalCluster
    namespace: str
    cq: str
    alice: User
    client: LocalClient

    def watch(self) -> Watch:
        return Watch(self.client, (self.namespace,))

    def live_pods(self, job_name: str) -> list[JSON]:
        pods = self.client.get(f"/api/v1/namespaces/{self.namespace}/pods?labelSelector=job-name%3D{job_name}")
        return [p for p in pods["items"] if live(p)]

    def running(self, job_name: str, pods: int) -> JSON:
        """Waits until the Job runs with ``pods`` live pods created by the Job controller."""
        started(self.cluster, self.namespace, job_name)
        eventually(lambda: len(self.live_pods(job_name)) == pods, what=f"{pods} live pods of {job_name}")
        return get(self.cluster, "job", job_name, self.namespace)


@pytest.fixture
def env(cluster: LocalCluster, escapes_turnstile: LocalTurnstile, namespace: str) -> Iterator[Env]:
    """A managed namespace with LocalQueue ``q`` on a ClusterQueue of 4 CPU, and alice with ``edit`` in it."""
    cluster.kubectl("label", "namespace", namespace, f"{OPT_IN}=true")
    cq = f"{namespace}-cq"
    apply(
        cluster,
        flavor(f"{namespace}-f"),
        cluster_queue(cq, flavors={f"{namespace}-f": {"cpu": "4"}}),
        local_queue(namespace, "q", cq),
    )
    client = LocalClient(cluster)
    alice = User(cluster, "alice", namespace)
    try:
        yield Env(cluster, namespace, cq, alice, client)
    finally:
        client.close()
        alice.api.close()
        cluster.kubectl("delete", "clusterqueue", cq, "--wait=false", check=False)
        cluster.kubectl("delete", "resourceflavor", f"{namespace}-f", "--wait=false", check=False)


def _job(
    env: Env,
    name: str,
    *,
    parallelism: int = 2,
    completions: int | None = None,
    cpu: str | None = "1",
    priority_class: str | None = None,
) -> JSON:
    """A Job in queue ``q``; ``cpu=None``: its container states no requests at all."""
    body = job(
        env.namespace,
        name,
        queue="q",
        parallelism=parallelism,
        requests={"cpu": cpu or "1"},
        priority_class=priority_class,
    )
    if completions is not None:
        body["spec"]["completions"] = completions
    if cpu is None:
        del body["spec"]["template"]["spec"]["containers"][0]["resources"]
    return body


# -- row 1 ------------------------------------------------------------------------------------------------


def test_row1_raising_parallelism_of_a_running_job_is_refused(env: Env) -> None:
    with env.watch() as watch:
        env.alice.create(_job(env, "wide", completions=12))  # 2 at a time of 12
        env.running("wide", 2)

        # The webhooks' cache is their own (the reconciler's is in another process): until it has seen the
        # admission the patch is refused for that (fail closed), so each try must be refused; the last for quota.
        def refusal() -> str | None:
            error = env.alice.refused("patch", "job", "wide", "--type=merge", "-p", '{"spec":{"parallelism":6}}')
            return None if "cannot confirm that its Workload" in error else error

        error = eventually(refusal, what="the refusal on quota, not on a view behind the admission")
        assert "would run beyond the quota" in error
        assert "runs 6 pods at once; its Workload was admitted for 2" in error
        # Lowering is within the admission and allowed.
        env.alice.patch("job", "wide", {"spec": {"parallelism": 1}})
        eventually(lambda: len(env.live_pods("wide")) == 1, what="one pod left")
    watch.assert_held()
    assert watch.peak_pods == 2


# -- row 2 ------------------------------------------------------------------------------------------------


HOLD_PROBE = "test.turnstile.x-k8s.io/hold-probe"


@contextlib.contextmanager
def _slow_release(env: Env, job_name: str) -> Iterator[None]:
    """Holds back anyone's unsuspend of one Job (a ValidatingAdmissionPolicy, enforced by the API server itself):
    the window in which a reconciler that is slow to re-release a user-suspended job leaves it suspended. Turnstile
    keeps serving its webhooks meanwhile; only its re-release is refused, and retried once the policy goes."""
    name = f"hold-{env.namespace}"[:63]
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {"apiGroups": ["batch"], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["jobs"]}
                ]
            },
            "matchConditions": [{"name": "this-job", "expression": f"object.metadata.name == '{job_name}'"}],
            "validations": [
                {
                    "expression": "!(oldObject.spec.suspend == true && object.spec.suspend == false)",
                    "message": "held suspended by the test",
                },
                {  # lets the test see when the policy is in force
                    "expression": "!has(object.metadata.annotations)"
                    f" || !('{HOLD_PROBE}' in object.metadata.annotations)",
                    "message": "the hold is in force",
                },
            ],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": env.namespace}}},
        },
    }
    apply(env.cluster, policy, binding)

    def in_force() -> bool:
        probe = env.cluster.kubectl(
            "annotate", "job", job_name, "-n", env.namespace, "--dry-run=server", f"{HOLD_PROBE}=x", check=False
        )
        return "the hold is in force" in probe.stderr

    eventually(in_force, what="the hold to be in force")
    try:
        yield
    finally:
        env.cluster.kubectl("delete", "validatingadmissionpolicybinding", name, check=False)
        env.cluster.kubectl("delete", "validatingadmissionpolicy", name, check=False)


def test_row2_bigger_pods_after_a_suspend_are_queued_again_not_run(env: Env) -> None:
    with env.watch() as watch:
        env.alice.create(_job(env, "grow"))
        env.running("grow", 2)
        # Turnstile releases an admitted job a user suspended (as Kueue does); the escape needs the user's requests
        # to land before it does. The test makes that window certain instead of racing for it.
        path = f"/apis/batch/v1/namespaces/{env.namespace}/jobs/grow"
        bigger = {
            "spec": {"template": {"spec": {"containers": [{"name": "main", "resources": {"requests": {"cpu": "3"}}}]}}}
        }
        with _slow_release(env, "grow"):
            env.alice.api.merge_patch(path, {"spec": {"suspend": True}})
            # Kubernetes 1.36 lets a suspended Job's pod resources change once its pods are gone.
            eventually(lambda: env.live_pods("grow") == [], what="the suspended job's pods to go")

            def grown() -> bool:
                try:
                    env.alice.api.request("PATCH", path, bigger, content_type="application/strategic-merge-patch+json")
                except ApiError:
                    return False  # the Job controller has not yet marked it Suspended
                return True

            eventually(grown, what="the requests to change while suspended")
        # Resuming on the old admission is refused; the job is queued again with its new shape (2 x 3 CPU on a
        # 4 CPU queue: it never fits, so it never runs).
        error = env.alice.refused("patch", "job", "grow", "--type=merge", "-p", '{"spec":{"suspend":false}}')
        assert "grow" in error
        pending = waiting(env.cluster, env.namespace, "grow", text="")
        assert pending["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"] == {
            "cpu": "3"
        }
        assert get(env.cluster, "job", "grow", env.namespace)["spec"]["suspend"] is True
        eventually(lambda: env.live_pods("grow") == [], what="the old pods to go")
    watch.assert_held()


# -- row 3 ------------------------------------------------------------------------------------------------


def test_row3_a_workload_shrunk_behind_its_job_never_lets_the_job_run(env: Env) -> None:
    with env.watch() as watch:
        env.alice.create(_job(env, "big", parallelism=4, cpu="2"))  # 8 CPU on 4: never fits
        waiting(env.cluster, env.namespace, "big", text="")
        name = job_workload_name(env.namespace, "big")
        # alice may only read Workloads (as Kueue's batch-user role).
        error = env.alice.refused("patch", WORKLOAD, name, "--type=merge", "-p", '{"spec":{"active":false}}')
        assert "Forbidden" in error or "forbidden" in error
        # Even someone who may (an admin) shrinking the pod sets does not make the job run as it is.
        tiny = [
            {
                "name": "main",
                "count": 4,
                "template": {
                    "spec": {
                        "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1m"}}}],
                        "restartPolicy": "Never",
                    }
                },
            }
        ]
        env.cluster.kubectl(
            "patch", WORKLOAD, name, "-n", env.namespace, "--type=merge", "-p", json.dumps({"spec": {"podSets": tiny}})
        )

        def back_to_the_jobs_shape() -> bool:
            wl = workload_of(env.cluster, env.namespace, "big") or {}
            spec = wl.get("spec", {}).get("podSets", [{}])[0].get("template", {}).get("spec", {})
            return bool(spec.get("containers", [{}])[0].get("resources", {}).get("requests") == {"cpu": "2"})

        eventually(back_to_the_jobs_shape, what="the Workload to describe the job again")
        assert get(env.cluster, "job", "big", env.namespace)["spec"]["suspend"] is True
        assert env.live_pods("big") == []
    watch.assert_held()


# -- row 4 ------------------------------------------------------------------------------------------------


def test_row4_a_workloads_priority_comes_only_from_its_class(env: Env) -> None:
    wpc = f"{env.namespace}-low"
    apply(env.cluster, priority_class(wpc, 10))
    try:
        with env.watch() as watch:
            env.alice.create(_job(env, "modest", priority_class=wpc))
            env.running("modest", 2)
            name = job_workload_name(env.namespace, "modest")
            error = env.alice.refused("patch", WORKLOAD, name, "--type=merge", "-p", '{"spec":{"priority":1000000}}')
            assert "forbidden" in error.lower()
            # Nor may anyone but Turnstile (the webhook refuses an admin too).
            done = env.cluster.kubectl(
                "patch",
                WORKLOAD,
                name,
                "-n",
                env.namespace,
                "--type=merge",
                "-p",
                '{"spec":{"priority":1000000}}',
                check=False,
            )
            assert done.returncode != 0
            assert "is set by Turnstile from the job's priority class" in done.stderr
            assert (workload_of(env.cluster, env.namespace, "modest") or {})["spec"]["priority"] == 10
        watch.assert_held()
    finally:
        env.cluster.kubectl("delete", "workloadpriorityclass", wpc, check=False)


# -- row 5 ------------------------------------------------------------------------------------------------


def test_row5_a_deleted_workload_keeps_its_quota_until_its_job_has_stopped(env: Env) -> None:
    with env.watch() as watch:
        env.alice.create(_job(env, "first", parallelism=4))
        env.running("first", 4)
        env.alice.create(_job(env, "second", parallelism=4))
        waiting(env.cluster, env.namespace, "second", text="")
        name = job_workload_name(env.namespace, "first")
        assert "forbidden" in env.alice.refused("delete", WORKLOAD, name, "--wait=false").lower()
        # An admin deletes it: the job stops first; the quota goes only when its pods are gone; then "second"
        # (and "first", queued again with a new Workload) run one after the other.
        env.cluster.kubectl("delete", WORKLOAD, name, "-n", env.namespace, "--wait=false")
        eventually(
            lambda: get(env.cluster, "job", "first", env.namespace)["spec"]["suspend"] is True, what="first to stop"
        )

        def one_runs() -> bool:
            runs = [
                n for n in ("first", "second") if get(env.cluster, "job", n, env.namespace)["spec"]["suspend"] is False
            ]
            return len(runs) == 1 and len(env.live_pods(runs[0])) == 4

        eventually(one_runs, what="one of the two to run again")
        fresh = workload_of(env.cluster, env.namespace, "first") or {}
        assert fresh.get("metadata", {}).get("finalizers") == ["kueue.x-k8s.io/resource-in-use"]
    watch.assert_held()


# -- row 6 ------------------------------------------------------------------------------------------------


def test_row6_limit_range_defaults_are_admitted_as_the_pods_will_ask(env: Env) -> None:
    limit_range = {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "defaults", "namespace": env.namespace},
        "spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": "1"}, "default": {"cpu": "1"}}]},
    }
    apply(env.cluster, limit_range)
    with env.watch() as watch:
        for i in range(6):
            env.alice.create(_job(env, f"bare{i}", parallelism=1, cpu=None))

        def admitted() -> list[str]:
            runs = [
                f"bare{i}"
                for i in range(6)
                if get(env.cluster, "job", f"bare{i}", env.namespace)["spec"]["suspend"] is False
            ]
            return runs if len(runs) == 4 and all(env.live_pods(n) for n in runs) else []

        runs = eventually(admitted, what="four of six 1-CPU jobs to run on 4 CPU")
        for name in runs:
            wl = workload_of(env.cluster, env.namespace, name) or {}
            assert wl["status"]["admission"]["podSetAssignments"][0]["resourceUsage"] == {"cpu": "1"}
    watch.assert_held()
    assert watch.peak_pods == 4


# -- row 7 ------------------------------------------------------------------------------------------------


def test_row7_the_queue_label_of_a_queued_job_cannot_be_removed(env: Env) -> None:
    with env.watch() as watch:
        env.alice.create(_job(env, "queued", parallelism=8))  # 8 CPU on 4: waits
        waiting(env.cluster, env.namespace, "queued", text="")
        error = env.alice.refused("label", "job", "queued", "kueue.x-k8s.io/queue-name-")
        assert "cannot be removed from a job Turnstile manages" in error
        error = env.alice.refused("patch", "job", "queued", "--type=merge", "-p", '{"spec":{"suspend":false}}')
        assert "is not admitted yet" in error
        assert get(env.cluster, "job", "queued", env.namespace)["spec"]["suspend"] is True
        assert env.live_pods("queued") == []
    watch.assert_held()


# -- row 8 ------------------------------------------------------------------------------------------------


def test_row8_an_unlabelled_job_created_while_turnstile_is_down_is_queued_once_it_is_back(
    env: Env, escapes_turnstile: LocalTurnstile
) -> None:
    apply(env.cluster, local_queue(env.namespace, "default", env.cq))
    unlabelled = _job(env, "sneaky", parallelism=6)  # 6 CPU on 4: once queued it must wait
    del unlabelled["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    escapes_turnstile.kill()
    try:
        created = env.alice.create(unlabelled)
        assert created["spec"].get("suspend") in (None, False)  # the webhook (Ignore) was not reached
        eventually(lambda: env.live_pods("sneaky"), what="the job to start its pods outside any quota")
    finally:
        escapes_turnstile.start()
    # While Turnstile was down the job ran outside every quota (unlabelled objects fail open, by design). Once
    # it is back, the job is suspended and queued; once the pods it started are gone, the invariant holds again
    # and keeps holding: 6 CPU never fit the queue's 4, so it never runs again.
    adopted = eventually(
        lambda: (j := get(env.cluster, "job", "sneaky", env.namespace))["spec"]["suspend"] is True and j,
        what="the job to be suspended",
    )
    assert adopted["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"
    eventually(lambda: env.live_pods("sneaky") == [], what="the pods it started to go")
    with env.watch() as watch:
        queued = waiting(env.cluster, env.namespace, "sneaky", text="needs 6")
        assert queued["spec"]["queueName"] == "default"
        watch.keep_watching(6)  # it stays queued: about a second of samples, whatever the steps above took
        assert get(env.cluster, "job", "sneaky", env.namespace)["spec"]["suspend"] is True
    watch.assert_held(min_samples=6)


# -- row 9 ------------------------------------------------------------------------------------------------


def test_row9_the_priority_class_label_changes_the_workloads_priority(env: Env) -> None:
    low, high = f"{env.namespace}-lo", f"{env.namespace}-hi"
    apply(env.cluster, priority_class(low, 10), priority_class(high, 1000))
    try:
        with env.watch() as watch:
            env.alice.create(_job(env, "climber", priority_class=low))
            env.running("climber", 2)
            env.alice.kubectl("label", "job", "climber", f"kueue.x-k8s.io/priority-class={high}", "--overwrite")
            eventually(
                lambda: (
                    (workload_of(env.cluster, env.namespace, "climber") or {}).get("spec", {}).get("priority") == 1000
                ),
                what="the Workload to take the new class's priority",
            )
            wl = workload_of(env.cluster, env.namespace, "climber") or {}
            assert wl["spec"]["priorityClassRef"]["name"] == high
            assert len(env.live_pods("climber")) == 2  # still running on its admission
        watch.assert_held()
    finally:
        env.cluster.kubectl("delete", "workloadpriorityclass", low, high, check=False)


# -- row 10 -----------------------------------------------------------------------------------------------


def test_row10_a_queue_label_in_the_pod_template_does_not_block_its_pods(
    env: Env, escapes_turnstile: LocalTurnstile
) -> None:
    mutating = json.loads(env.cluster.kubectl("get", "mutatingwebhookconfiguration", "turnstile", "-o", "json").stdout)
    assert not [h["name"] for h in mutating["webhooks"] if "pods" in h["rules"][0]["resources"]]
    with env.watch() as watch:
        body = _job(env, "labelled-pods")
        body["spec"]["template"]["metadata"] = {"labels": {"kueue.x-k8s.io/queue-name": "q"}}
        env.alice.create(body)
        env.running("labelled-pods", 2)
        watch.keep_watching(3)  # the Job can be running within two samples: hold the watch for three at least
    watch.assert_held()


# -- row 11 -----------------------------------------------------------------------------------------------


def test_row11_a_deleted_cluster_queue_admits_nothing_and_goes_once_empty(env: Env) -> None:
    with env.watch() as watch:
        env.alice.create(_job(env, "inside"))
        env.running("inside", 2)
        env.cluster.kubectl("delete", "clusterqueue", env.cq, "--wait=false")
        eventually(
            lambda: (
                (condition(get(env.cluster, "clusterqueue", env.cq), "Active") or {}).get("reason") == "Terminating"
            ),
            what="the ClusterQueue to say it is terminating",
        )
        active = condition(get(env.cluster, "clusterqueue", env.cq), "Active") or {}
        assert (active.get("status"), active.get("message")) == (
            "False",
            "Can't admit new workloads; clusterQueue is terminating",
        )
        env.alice.create(_job(env, "late", parallelism=1))
        waiting(env.cluster, env.namespace, "late", text="terminating")
        # Once the admitted job is gone, nothing holds the queue: the delete completes.
        env.alice.kubectl("delete", "job", "inside", "--wait=false")
        eventually(lambda: maybe_get(env.cluster, "clusterqueue", env.cq) is None, what="the ClusterQueue to go")
        # An unused flavor goes at once.
        env.cluster.kubectl("delete", "resourceflavor", f"{env.namespace}-f", "--wait=false")
        eventually(
            lambda: maybe_get(env.cluster, "resourceflavor", f"{env.namespace}-f") is None, what="the flavor to go"
        )
        assert get(env.cluster, "job", "late", env.namespace)["spec"]["suspend"] is True
    watch.assert_held()


# -- namespace policy -------------------------------------------------------------------------------------


def test_unmanaged_namespaces_do_not_depend_on_turnstile(
    cluster: LocalCluster, escapes_turnstile: LocalTurnstile, namespace: str
) -> None:
    # ``namespace`` is not opted in: Turnstile does not manage it, so its webhooks must not select it.
    alice = User(cluster, "alice", namespace)
    labelled = job(namespace, "elsewhere", queue="q")
    alice.api.close()
    escapes_turnstile.kill()
    try:
        created = alice.create(labelled)  # the fail-closed webhook would refuse it, were it selected
    finally:
        escapes_turnstile.start()
    assert created["spec"].get("suspend") in (None, False)
    # And Turnstile leaves it alone once back: after it has queued a job in a managed namespace (so a pass over
    # every Job ran), the unmanaged one is still untouched.
    probe = job(PROBE_NAMESPACE, f"after-{namespace}", queue="x")
    cluster.kubectl("create", "-f", "-", input=json.dumps(probe))
    try:
        eventually(lambda: workload_of(cluster, PROBE_NAMESPACE, probe["metadata"]["name"]), what="a pass to run")
        assert get(cluster, "job", "elsewhere", namespace)["spec"].get("suspend") is False
        assert workload_of(cluster, namespace, "elsewhere") is None
    finally:
        cluster.kubectl("delete", "job", probe["metadata"]["name"], "-n", PROBE_NAMESPACE, "--wait=false")
