"""The view of a Workload a job adapter reads: its recorded pod sets and its admission's assignments."""

from __future__ import annotations

from webhook.api.workloadrecord import WorkloadRecord

TEMPLATE = {"spec": {"containers": [{"name": "c"}]}}


def test_pod_sets_as_recorded() -> None:
    record = WorkloadRecord.of({"spec": {"podSets": [{"name": "main", "count": 2, "template": TEMPLATE}, {}]}})
    first, second = record.pod_sets
    assert (first.name, first.count, first.template.raw) == ("main", 2, TEMPLATE)
    assert (second.name, second.count, dict(second.template.raw)) == (None, None, {})
    assert second.name_or("main") == "main"


def test_assignments_of_the_admission() -> None:
    main = {"name": "main", "count": 3, "flavors": {"cpu": "spot"}, "resourceUsage": {"cpu": "3"}}
    admission = {"podSetAssignments": [main, {"name": "w"}]}
    first, worker = WorkloadRecord.of({"status": {"admission": admission}}).assignments
    assert (first.name, first.count, first.flavors, first.resource_usage) == ("main", 3, {"cpu": "spot"}, {"cpu": "3"})
    assert (worker.name, worker.count, worker.flavors, worker.resource_usage) == ("w", 0, {}, {})


def test_no_admission_has_no_assignments() -> None:
    assert WorkloadRecord.of({"status": {"admission": None}}).assignments == ()
    assert WorkloadRecord.of({}).pod_sets == ()
