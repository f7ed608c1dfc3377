"""batch/v1 Job: managed jobs are suspended, defaulted and stamped; unmanaged jobs pass untouched; the
validating policy refuses every way of escaping the queue, with messages that say what to do."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.unit.admission.builders import NAMESPACE, TURNSTILE_USER, apply, make_job, make_request
from webhook.admission import job_policy
from webhook.admission.options import AdmissionOptions
from webhook.admission.selector import Selector
from webhook.admission.view import StaticView
from webhook.api import constants as c
from webhook.api.selector import Requirement
from webhook.api.views import ObjectView
from webhook.core.namespace_policy import NamespacePolicy
from webhook.jobs import naming
from webhook.jobs.poddefaults import PodDefaults

OPTIONS = AdmissionOptions(trusted_users=frozenset({TURNSTILE_USER}))
WORKLOAD = naming.job_workload_name(NAMESPACE, "pi")


def mutated(
    job: dict[str, Any],
    *,
    view: StaticView | None = None,
    options: AdmissionOptions = OPTIONS,
    namespace: str = NAMESPACE,
    dry_run: bool = False,
) -> dict[str, Any]:
    request = make_request(job, namespace=namespace, dry_run=dry_run)
    verdict = job_policy.mutate(request, view or StaticView(), options)
    assert verdict.allowed
    return apply(job, verdict)


class TestMutate:
    def test_labelled_job_is_suspended_and_stamped(self) -> None:
        job = mutated(make_job(queue="user-queue"))
        assert job["spec"]["suspend"] is True
        assert job["metadata"]["annotations"][c.WORKLOAD_NAME_ANNOTATION] == WORKLOAD

    def test_unlabelled_job_is_untouched(self) -> None:
        job = make_job(queue=None)
        assert mutated(job) == job

    def test_queue_defaults_to_the_namespace_default_local_queue(self) -> None:
        view = StaticView(local_queues={(NAMESPACE, "default")})
        job = mutated(make_job(queue=None), view=view)
        assert job["metadata"]["labels"][c.QUEUE_NAME_LABEL] == "default"
        assert job["spec"]["suspend"] is True

    def test_default_local_queue_elsewhere_does_not_count(self) -> None:
        view = StaticView(local_queues={("other", "default")})
        job = make_job(queue=None)
        assert mutated(job, view=view) == job

    def test_priority_class_defaults_when_default_class_exists(self) -> None:
        job = mutated(make_job(), view=StaticView(priority_classes={"default"}))
        assert job["metadata"]["labels"][c.PRIORITY_CLASS_LABEL] == "default"

    def test_explicit_priority_class_is_kept(self) -> None:
        original = make_job(labels={c.PRIORITY_CLASS_LABEL: "high"})
        job = mutated(original, view=StaticView(priority_classes={"default"}))
        assert job["metadata"]["labels"][c.PRIORITY_CLASS_LABEL] == "high"

    def test_manage_without_queue_name_suspends_unlabelled_jobs(self) -> None:
        options = AdmissionOptions(manage_jobs_without_queue_name=True)
        assert mutated(make_job(queue=None), options=options)["spec"]["suspend"] is True

    @pytest.mark.parametrize(
        "namespace",
        [pytest.param("kube-system", id="kube-system"), pytest.param("turnstile-system", id="own-namespace")],
    )
    def test_protected_namespaces_are_never_touched(self, namespace: str) -> None:
        options = AdmissionOptions(manage_jobs_without_queue_name=True)
        job = make_job()
        assert mutated(job, namespace=namespace, options=options) == job

    def test_namespace_outside_the_selector_is_untouched_even_with_a_queue_label(self) -> None:
        selector = Selector((Requirement("team", "In", frozenset({"ml"})),))
        options = AdmissionOptions(namespaces=NamespacePolicy(selector))
        view = StaticView(namespaces={NAMESPACE: {"team": "web"}})
        job = make_job()
        assert mutated(job, view=view, options=options) == job

    def test_opt_in_label_mode_manages_only_labelled_namespaces(self) -> None:
        options = AdmissionOptions(
            namespaces=NamespacePolicy(Selector(), opt_in_label=c.OPENSHIFT_MANAGED_NAMESPACE_LABEL)
        )
        job = make_job()
        assert mutated(job, view=StaticView(namespaces={NAMESPACE: {}}), options=options) == job
        opted_in = StaticView(namespaces={NAMESPACE: {c.OPENSHIFT_MANAGED_NAMESPACE_LABEL: "true"}})
        assert mutated(job, view=opted_in, options=options)["spec"]["suspend"] is True

    def test_child_of_a_managed_kind_is_not_suspended_twice(self) -> None:
        job = make_job(owner_kind="Job")
        assert mutated(job) == job

    def test_child_of_an_unmanaged_kind_is_managed(self) -> None:
        job = mutated(make_job(owner_kind="CronJob"))
        assert job["spec"]["suspend"] is True

    def test_reinvocation_yields_an_empty_patch(self) -> None:
        view = StaticView(local_queues={(NAMESPACE, "default")}, priority_classes={"default"})
        once = mutated(make_job(queue=None), view=view)
        verdict = job_policy.mutate(make_request(once), view, OPTIONS)
        assert verdict.patch == ()

    def test_dry_run_gets_the_same_answer(self) -> None:
        job = make_job()
        real = job_policy.mutate(make_request(job), StaticView(), OPTIONS)
        dry = job_policy.mutate(make_request(job, dry_run=True), StaticView(), OPTIONS)
        assert real == dry

    def test_job_without_a_name_yet_is_suspended_without_a_stamp(self) -> None:
        job = make_job(name="")
        out = mutated(job)
        assert out["spec"]["suspend"] is True
        assert c.WORKLOAD_NAME_ANNOTATION not in out["metadata"].get("annotations", {})


def validate(
    job: dict[str, Any],
    *,
    old: dict[str, Any] | None = None,
    view: StaticView | None = None,
    user: str = "alice",
    options: AdmissionOptions = OPTIONS,
) -> str | None:
    operation = "UPDATE" if old is not None else "CREATE"
    verdict = job_policy.validate(
        make_request(job, operation=operation, old=old, user=user), view or StaticView(), options
    )
    return None if verdict.allowed else verdict.message


class TestValidateCreate:
    @pytest.mark.parametrize(
        ("job", "fragment"),
        [
            pytest.param(make_job(queue="Bad_Queue"), "metadata.labels[kueue.x-k8s.io/queue-name]", id="queue-name"),
            pytest.param(
                make_job(labels={c.MAX_EXEC_TIME_LABEL: "soon"}), "whole number of seconds", id="max-exec-not-a-number"
            ),
            pytest.param(make_job(labels={c.MAX_EXEC_TIME_LABEL: "0"}), "greater than 0", id="max-exec-zero"),
            pytest.param(
                make_job(parallelism=4, annotations={c.JOB_MIN_PARALLELISM_ANNOTATION: "4"}),
                "between 1 and 3",
                id="min-parallelism-not-below-parallelism",
            ),
            pytest.param(
                make_job(parallelism=4, annotations={c.JOB_MIN_PARALLELISM_ANNOTATION: "x"}),
                "whole number of pods",
                id="min-parallelism-not-a-number",
            ),
            pytest.param(
                make_job(parallelism=4, completions=2, annotations={c.JOB_MIN_PARALLELISM_ANNOTATION: "2"}),
                "between 1 and 1",
                id="min-parallelism-capped-by-completions",
            ),
        ],
    )
    def test_refused(self, job: dict[str, Any], fragment: str) -> None:
        message = validate(job)
        assert message is not None
        assert fragment in message

    @pytest.mark.parametrize(
        "job",
        [
            pytest.param(make_job(), id="plain"),
            pytest.param(make_job(labels={c.MAX_EXEC_TIME_LABEL: "3600"}), id="max-exec"),
            pytest.param(
                make_job(parallelism=4, annotations={c.JOB_MIN_PARALLELISM_ANNOTATION: "2"}), id="partial-admission"
            ),
        ],
    )
    def test_allowed(self, job: dict[str, Any]) -> None:
        assert validate(job) is None


class TestValidateUpdate:
    def test_unsuspending_an_unadmitted_job_is_refused_with_directions(self) -> None:
        message = validate(make_job(suspend=False), old=make_job(suspend=True))
        assert message is not None
        assert "spec.suspend: Forbidden" in message
        assert WORKLOAD in message
        assert "kubectl -n team-a get workload" in message

    def test_unsuspending_an_admitted_job_is_allowed(self) -> None:
        view = StaticView(admitted_workloads={(NAMESPACE, WORKLOAD)})
        assert validate(make_job(suspend=False), old=make_job(suspend=True), view=view) is None

    def test_turnstile_itself_may_unsuspend(self) -> None:
        assert validate(make_job(suspend=False), old=make_job(suspend=True), user=TURNSTILE_USER) is None

    def test_removing_suspend_counts_as_unsuspending(self) -> None:
        assert validate(make_job(), old=make_job(suspend=True)) is not None

    def test_unmanaged_job_may_unsuspend(self) -> None:
        assert validate(make_job(queue=None, suspend=False), old=make_job(queue=None, suspend=True)) is None

    def test_unsuspending_and_dropping_the_label_at_once_is_still_refused(self) -> None:
        message = validate(make_job(queue=None, suspend=False), old=make_job(suspend=True))
        assert message is not None
        assert "spec.suspend" in message

    @pytest.mark.parametrize(
        ("new_queue", "fragment"),
        [
            pytest.param("other", "cannot change while the job runs", id="changed"),
            pytest.param(None, "cannot change while the job runs", id="removed"),
        ],
    )
    def test_queue_of_a_running_job_is_fixed(self, new_queue: str | None, fragment: str) -> None:
        message = validate(make_job(queue=new_queue, suspend=False), old=make_job(suspend=False))
        assert message is not None
        assert fragment in message

    def test_queue_of_a_suspended_job_may_change(self) -> None:
        assert validate(make_job(queue="other", suspend=True), old=make_job(suspend=True)) is None

    def test_queue_label_cannot_be_removed_from_a_queued_job(self) -> None:
        # Removed and then unsuspended, the job would run outside every quota.
        message = validate(make_job(queue=None, suspend=True), old=make_job(suspend=True))
        assert message is not None
        assert "cannot be removed from a job Turnstile manages" in message

    def test_queue_label_may_be_removed_from_a_finished_job(self) -> None:
        old = make_job(suspend=True)
        old["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
        assert validate(make_job(queue=None, suspend=True), old=old) is None

    def test_max_exec_time_is_fixed_while_running(self) -> None:
        old = make_job(suspend=False, labels={c.MAX_EXEC_TIME_LABEL: "60"})
        new = make_job(suspend=False, labels={c.MAX_EXEC_TIME_LABEL: "6000"})
        message = validate(new, old=old)
        assert message is not None
        assert c.MAX_EXEC_TIME_LABEL in message

    def test_max_exec_time_cannot_change_in_the_update_that_suspends_the_job(self) -> None:
        # Only a job suspended before and after may take a new limit: this update still starts from a running job.
        old = make_job(suspend=False, labels={c.MAX_EXEC_TIME_LABEL: "60"})
        new = make_job(suspend=True, labels={c.MAX_EXEC_TIME_LABEL: "6000"})
        message = validate(new, old=old)
        assert message is not None
        assert c.MAX_EXEC_TIME_LABEL in message

    def test_max_exec_time_may_change_while_suspended(self) -> None:
        old = make_job(suspend=True, labels={c.MAX_EXEC_TIME_LABEL: "60"})
        new = make_job(suspend=True, labels={c.MAX_EXEC_TIME_LABEL: "6000"})
        assert validate(new, old=old) is None

    @pytest.mark.parametrize("prebuilt", ["other-workload", None], ids=["changed", "removed"])
    def test_the_prebuilt_workload_of_a_running_job_is_fixed(self, prebuilt: str | None) -> None:
        old = make_job(suspend=False, labels={c.PREBUILT_WORKLOAD_LABEL: "mine"})
        new = make_job(suspend=False, labels={c.PREBUILT_WORKLOAD_LABEL: prebuilt} if prebuilt else {})
        message = validate(new, old=old)
        assert message is not None
        assert c.PREBUILT_WORKLOAD_LABEL in message

    def test_the_prebuilt_workload_of_a_suspended_job_may_change(self) -> None:
        old = make_job(suspend=True, labels={c.PREBUILT_WORKLOAD_LABEL: "mine"})
        new = make_job(suspend=True, labels={c.PREBUILT_WORKLOAD_LABEL: "other-workload"})
        assert validate(new, old=old) is None

    def test_priority_class_cannot_be_removed(self) -> None:
        old = make_job(suspend=True, labels={c.PRIORITY_CLASS_LABEL: "high"})
        message = validate(make_job(suspend=True), old=old)
        assert message is not None
        assert "cannot be removed" in message

    def test_parallelism_is_fixed_while_running_with_partial_admission(self) -> None:
        annotations = {c.JOB_MIN_PARALLELISM_ANNOTATION: "2"}
        old = make_job(suspend=False, parallelism=4, annotations=annotations)
        new = make_job(suspend=False, parallelism=8, annotations=annotations)
        message = validate(new, old=old)
        assert message is not None
        assert "spec.parallelism" in message

    def test_the_workload_stamp_cannot_be_edited(self) -> None:
        old = make_job(suspend=True, annotations={c.WORKLOAD_NAME_ANNOTATION: WORKLOAD})
        new = make_job(suspend=True, annotations={c.WORKLOAD_NAME_ANNOTATION: "job-other-12345"})
        message = validate(new, old=old)
        assert message is not None
        assert c.WORKLOAD_NAME_ANNOTATION in message

    def test_every_problem_is_reported_at_once(self) -> None:
        old = make_job(suspend=True)
        new = make_job(queue="Bad_Queue", suspend=False, labels={c.MAX_EXEC_TIME_LABEL: "-1"})
        message = validate(new, old=old)
        assert message is not None
        assert message.startswith("[")
        assert "spec.suspend" in message
        assert "queue-name" in message
        assert c.MAX_EXEC_TIME_LABEL in message


def admitted_workload(*, count: int, cpu_total: str) -> dict[str, Any]:
    return {
        "metadata": {"name": WORKLOAD, "namespace": NAMESPACE},
        "spec": {"podSets": [{"name": "main", "count": count, "template": {"spec": {"containers": []}}}]},
        "status": {
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [
                    {"name": "main", "count": count, "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": cpu_total}}
                ],
            }
        },
    }


def with_cpu(job: dict[str, Any], cpu: str) -> dict[str, Any]:
    job["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    return job


class TestRunsOnlyAsAdmitted:
    """A job whose Workload is admitted may run only within that admission (issue rows 1 and 2)."""

    def view(self, *, count: int = 2, cpu_total: str = "2", defaults: PodDefaults | None = None) -> StaticView:
        return StaticView(
            admitted_workloads={(NAMESPACE, WORKLOAD)},
            workloads={(NAMESPACE, WORKLOAD): admitted_workload(count=count, cpu_total=cpu_total)},
            defaults=defaults or PodDefaults(),
        )

    def test_raising_parallelism_of_a_running_job_is_refused(self) -> None:
        old = with_cpu(make_job(suspend=False, parallelism=2), "1")
        new = with_cpu(make_job(suspend=False, parallelism=6), "1")
        message = validate(new, old=old, view=self.view())
        assert message is not None
        assert "runs 6 pods at once" in message
        assert "admitted for 2" in message

    @pytest.mark.parametrize("known", [True, False], ids=["workload-not-admitted", "workload-unknown"])
    def test_a_running_job_whose_admission_cannot_be_confirmed_keeps_its_pods(self, known: bool) -> None:
        # The webhook's view lags behind the API server (or the Workload was just evicted): fail closed.
        workloads = {(NAMESPACE, WORKLOAD): admitted_workload(count=2, cpu_total="2")} if known else {}
        view = StaticView(workloads=workloads)
        old = with_cpu(make_job(suspend=False, parallelism=2), "1")
        new = with_cpu(make_job(suspend=False, parallelism=6), "1")
        message = validate(new, old=old, view=view)
        assert message is not None
        assert "cannot confirm that its Workload" in message

    def test_a_finished_job_without_an_admitted_workload_may_change(self) -> None:
        old = with_cpu(make_job(suspend=False, parallelism=2), "1")
        old["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
        new = copy.deepcopy(old)
        new["spec"]["parallelism"] = 0
        assert validate(new, old=old, view=StaticView()) is None

    def test_lowering_parallelism_of_a_running_job_is_allowed(self) -> None:
        old = with_cpu(make_job(suspend=False, parallelism=2), "1")
        new = with_cpu(make_job(suspend=False, parallelism=1), "1")
        assert validate(new, old=old, view=self.view()) is None

    def test_resuming_with_bigger_pods_is_refused(self) -> None:
        old = with_cpu(make_job(suspend=True, parallelism=2), "4")
        new = with_cpu(make_job(suspend=False, parallelism=2), "4")
        message = validate(new, old=old, view=self.view())
        assert message is not None
        assert "each pod asks for 4 cpu" in message

    def test_resuming_as_admitted_is_allowed(self) -> None:
        old = with_cpu(make_job(suspend=True, parallelism=2), "1")
        new = with_cpu(make_job(suspend=False, parallelism=2), "1")
        assert validate(new, old=old, view=self.view()) is None

    def test_limit_range_defaults_count(self) -> None:
        limit_range = {"spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": "3"}}]}}
        old, new = make_job(suspend=True, parallelism=2), make_job(suspend=False, parallelism=2)
        message = validate(
            new, old=old, view=self.view(defaults=PodDefaults(limit_ranges=[ObjectView.of(limit_range)]))
        )
        assert message is not None
        assert "each pod asks for 3 cpu" in message

    def test_turnstile_itself_is_trusted(self) -> None:
        old = with_cpu(make_job(suspend=True, parallelism=2), "4")
        new = with_cpu(make_job(suspend=False, parallelism=2), "4")
        assert validate(new, old=old, view=self.view(), user=TURNSTILE_USER) is None
