"""``turnstile migrate-storage``: every stored queue object rewritten at the storage version (v1beta2).

Owns: ``migrate_storage``. An object is stored in the encoding of the version that was the storage version when
it was last written, so objects from before the upgrade stay v1beta1 in etcd, and the API server converts them on
every read (through our webhook for ClusterQueue, LocalQueue and Workload). Each object gets a no-op write (a merge
patch that only names its resourceVersion): the API server decodes it, converts it and stores it again at v1beta2.
A Conflict means someone else wrote it meanwhile, which stored it at v1beta2 too. Once every object of a kind is
rewritten, the CRD's ``status.storedVersions`` is set to ``[v1beta2]``, so v1beta1 could later stop being served.
Nothing about the objects changes: no spec, no status, no generation; admitted Workloads stay admitted.
Must not: run while the conversion webhook is unreachable (listing needs it; the command fails and says so, and
leaves ``storedVersions`` alone).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from webhook.api import constants
from webhook.api.views import ObjectView, entries
from webhook.kube import errors
from webhook.kube.client import Kube
from webhook.kube.resources import CUSTOM_RESOURCE_DEFINITION, KUEUE_KINDS, Resource


@dataclass
class KindReport:
    kind: str
    rewritten: int = 0
    written_meanwhile: int = 0  # Conflict: written by someone else since the list, so already re-encoded
    gone: int = 0  # deleted since the list
    stored_versions_before: list[str] = field(default_factory=list)


async def migrate_kind(kube: Kube, resource: Resource) -> KindReport:
    """Rewrites every object of ``resource``, then records that only the storage version is stored."""
    crd_name = f"{resource.plural}.{resource.group}"
    crd = ObjectView.of(await kube.get(CUSTOM_RESOURCE_DEFINITION, crd_name))
    report = KindReport(resource.kind, stored_versions_before=list(entries(crd.status, "storedVersions")))
    # 1. Every object, read at the storage version (converted by the API server where needed).
    listed = await kube.list(resource)
    # 2. A no-op write each: re-encoded at the storage version.
    for obj in map(ObjectView.of, listed.items):
        try:
            await kube.patch(
                resource,
                obj.name,
                {"metadata": {"resourceVersion": obj.metadata["resourceVersion"]}},
                namespace=obj.metadata.get("namespace"),
            )
            report.rewritten += 1
        except errors.Conflict:
            report.written_meanwhile += 1
        except errors.NotFound:
            report.gone += 1
    # 3. Only now may storedVersions forget v1beta1.
    await kube.patch_status(CUSTOM_RESOURCE_DEFINITION, crd_name, {"status": {"storedVersions": [constants.VERSION]}})
    return report


async def migrate_storage(kube: Kube, kinds: tuple[Resource, ...] = KUEUE_KINDS) -> list[KindReport]:
    return [await migrate_kind(kube, resource) for resource in kinds]


def render(reports: list[KindReport]) -> str:
    lines = []
    for r in reports:
        before = ",".join(r.stored_versions_before) or "-"
        lines.append(
            f"{r.kind}: {r.rewritten} rewritten, {r.written_meanwhile} written meanwhile, {r.gone} gone; "
            f"storedVersions {before} -> {constants.VERSION}"
        )
    return "\n".join(lines)
