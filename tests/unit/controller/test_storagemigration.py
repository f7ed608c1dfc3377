"""migrate-storage: every object gets one no-op write, a concurrent writer is not an error, storedVersions last."""

from __future__ import annotations

from tests.doubles.fakekube import FakeKube
from webhook.controller.storagemigration import migrate_storage, render
from webhook.kube import resources as r

V2 = "kueue.x-k8s.io/v1beta2"


def crd(resource: r.Resource) -> dict[str, object]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{resource.plural}.{resource.group}"},
        "spec": {},
    }


async def seeded() -> FakeKube:
    kube = FakeKube()
    for resource in r.KUEUE_KINDS:
        await kube.create(r.CUSTOM_RESOURCE_DEFINITION, crd(resource))
        await kube.patch_status(
            r.CUSTOM_RESOURCE_DEFINITION,
            f"{resource.plural}.{resource.group}",
            {"status": {"storedVersions": ["v1beta1", "v1beta2"]}},
        )
    for name in ("a", "b"):
        await kube.create(r.CLUSTER_QUEUE, {"apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": name}})
    wl = {"apiVersion": V2, "kind": "Workload", "metadata": {"name": "w", "namespace": "ns"}, "spec": {"podSets": []}}
    await kube.create(r.WORKLOAD, wl)
    await kube.patch_status(r.WORKLOAD, "w", {"status": {"admission": {"clusterQueue": "a"}}}, namespace="ns")
    return kube


async def test_every_object_is_written_once_unchanged_and_stored_versions_end_at_v1beta2() -> None:
    kube = await seeded()
    before = {o["metadata"]["name"]: o for res in (r.CLUSTER_QUEUE, r.WORKLOAD) for o in kube.objects(res)}

    reports = await migrate_storage(kube)

    assert {x.kind: x.rewritten for x in reports} == {
        "ResourceFlavor": 0,
        "WorkloadPriorityClass": 0,
        "Cohort": 0,
        "ClusterQueue": 2,
        "LocalQueue": 0,
        "Workload": 1,
    }
    for res in (r.CLUSTER_QUEUE, r.WORKLOAD):
        for obj in kube.objects(res):
            old = before[obj["metadata"]["name"]]
            assert {k: v for k, v in obj.items() if k != "metadata"} == {
                k: v for k, v in old.items() if k != "metadata"
            }
            assert obj["metadata"]["generation"] == old["metadata"]["generation"]
    for crd_obj in kube.objects(r.CUSTOM_RESOURCE_DEFINITION):
        assert crd_obj["status"]["storedVersions"] == ["v1beta2"]
    assert "ClusterQueue: 2 rewritten" in render(reports)
    assert "storedVersions v1beta1,v1beta2 -> v1beta2" in render(reports)


async def test_an_object_written_since_the_list_counts_as_written_meanwhile() -> None:
    kube = await seeded()
    original_list = kube.list

    async def list_then_write(resource: r.Resource, **kwargs: object) -> object:
        listed = await original_list(resource, **kwargs)  # type: ignore[arg-type]
        if resource == r.CLUSTER_QUEUE:
            await kube.patch(r.CLUSTER_QUEUE, "a", {"metadata": {"labels": {"touched": "yes"}}})
        return listed

    kube.list = list_then_write  # type: ignore[method-assign,assignment]

    reports = await migrate_storage(kube, (r.CLUSTER_QUEUE,))

    assert (reports[0].rewritten, reports[0].written_meanwhile) == (1, 1)
