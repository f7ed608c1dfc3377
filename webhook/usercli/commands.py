"""The I/O of the user and admin commands: read objects through ``Kube``, hand them to ``views``, print.

Owns: one coroutine per subcommand (returning the text to print, so tests read it without a terminal),
finding the kubeconfig and default namespace the way kubectl does, and turning API errors into one line.
Must not: compute positions or states (``views``) or lay out text (``render``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import yaml

from webhook.api.views import BatchJob, ObjectView, WorkloadRecord
from webhook.core import fit as core_fit
from webhook.core.snapshot import Snapshot
from webhook.core.snapshotparse import SnapshotParser
from webhook.kube import resources as r
from webhook.kube.client import Kube
from webhook.kube.errors import Forbidden, KubeError, NotFound
from webhook.kube.objects import Object
from webhook.usercli import render, views
from webhook.usercli.candidate import NotAJob, candidate_workload, fit_text

StopPolicy = Literal["None", "Hold", "HoldAndDrain"]
_SA_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


class CommandError(Exception):
    """A problem the user can fix (a name not found, a permission missing): printed as one line, exit 1."""


async def _list_visible(kube: Kube, resource: r.Resource, namespace: str | None) -> tuple[list[Object], bool]:
    """Objects of every namespace if we may list them, else of ``namespace``; and whether all were listed."""
    try:
        return (await kube.list(resource)).items, True
    except Forbidden:
        if namespace is None:
            raise
        return (await kube.list(resource, namespace=namespace)).items, False


async def _get_or_none(kube: Kube, resource: r.Resource, name: str, *, namespace: str | None = None) -> Object | None:
    if not name:
        return None
    try:
        return await kube.get(resource, name, namespace=namespace)
    except (NotFound, Forbidden):
        return None


def _output(value: Any, fmt: render.OutputFormat, text: str) -> str:
    return text if fmt == "table" else render.dump(value, fmt)


async def queues(kube: Kube, *, namespace: str | None, fmt: render.OutputFormat = "table") -> str:
    """ClusterQueues (when readable) and LocalQueues (of ``namespace``, or all when None)."""
    notes = []
    try:
        cqs = [views.cluster_queue_view(o) for o in (await kube.list(r.CLUSTER_QUEUE)).items]
    except Forbidden:
        cqs, notes = [], ["you may not list ClusterQueues; showing LocalQueues only"]
    lqs = [views.local_queue_view(o) for o in (await kube.list(r.LOCAL_QUEUE, namespace=namespace)).items]
    cqs.sort(key=lambda q: q.name)
    lqs.sort(key=lambda q: (q.namespace, q.name))
    parts = [render.cluster_queues_table(cqs)] if cqs else []
    parts.append(render.local_queues_table(lqs) if lqs else "No LocalQueues found.")
    parts += [f"Note: {n}" for n in notes]
    return _output({"clusterQueues": cqs, "localQueues": lqs}, fmt, "\n\n".join(parts))


async def workloads(
    kube: Kube,
    *,
    namespace: str | None,
    pending_only: bool,
    now: datetime,
    fmt: render.OutputFormat = "table",
) -> str:
    """Workloads of ``namespace`` (all when None), pending ones with their position in their ClusterQueue."""
    everything, complete = await _list_visible(kube, r.WORKLOAD, namespace)
    local_queues, _ = await _list_visible(kube, r.LOCAL_QUEUE, namespace)
    rows = views.workload_views(everything, local_queues=local_queues, now=now)
    rows = [w for w in rows if namespace is None or w.namespace == namespace]
    if pending_only:
        rows = [w for w in rows if w.state == "Pending"]
    rows = views.sort_for_listing(rows)
    text = "No workloads found." if not rows else render.workloads_table(rows, all_namespaces=namespace is None)
    if not complete:
        text += f"\n\nNote: positions count only the workloads of namespace {namespace} (you may not list others)"
    return _output(rows, fmt, text)


async def why(kube: Kube, target: str, *, namespace: str, now: datetime, fmt: render.OutputFormat = "table") -> str:
    """Why ``target`` (``NAME`` or ``job/NAME`` for a Job, ``workload/NAME``) waits, or what it is doing."""
    kind, _, name = target.rpartition("/")
    kind = (kind or "job").lower()
    job: BatchJob | None = None
    workload: WorkloadRecord | None = None
    if kind in ("job", "jobs", "job.batch"):
        subject = f"Job {namespace}/{name}"
        try:
            job = BatchJob.of(await kube.get(r.JOB, name, namespace=namespace))
        except NotFound:
            raise CommandError(f"job {name!r} not found in namespace {namespace!r}") from None
        wls, _ = await _list_visible(kube, r.WORKLOAD, namespace)
        mine = (WorkloadRecord.of(w) for w in wls)
        workload = views.find_workload_for(job, [w for w in mine if w.key.namespace == namespace])
    elif kind in ("workload", "workloads", "wl"):
        subject = f"Workload {namespace}/{name}"
        try:
            workload = WorkloadRecord.of(await kube.get(r.WORKLOAD, name, namespace=namespace))
        except NotFound:
            raise CommandError(f"workload {name!r} not found in namespace {namespace!r}") from None
    else:
        raise CommandError(f"cannot explain a {kind!r}: give a job name, job/NAME or workload/NAME")

    local_queue = cluster_queue = None
    peers: list[Object] = []
    local_queues: list[Object] = []
    if workload is not None:
        local_queue = await _get_or_none(kube, r.LOCAL_QUEUE, workload.queue_name, namespace=namespace)
        target = ObjectView.of(local_queue).spec.get("clusterQueue", "") if local_queue is not None else ""
        cluster_queue = await _get_or_none(kube, r.CLUSTER_QUEUE, str(workload.admitted_to or target))
        peers, _ = await _list_visible(kube, r.WORKLOAD, namespace)
        local_queues, _ = await _list_visible(kube, r.LOCAL_QUEUE, namespace)
    fit_answer = None
    if workload is not None:
        # The scheduler's answer needs every ClusterQueue and flavor; a user who may not list them still gets the
        # rest of the report, from the Workload's own conditions.
        with contextlib.suppress(CommandError):
            snapshot, _ = await cluster_snapshot(kube, namespace)
            fit_answer = core_fit.explain_workload(snapshot, workload.key, now=now)
    report = views.explain(
        subject,
        job=job,
        workload=workload,
        local_queue=local_queue,
        cluster_queue=cluster_queue,
        peers=peers,
        local_queues=local_queues,
        now=now,
    )
    report = dataclasses.replace(report, fit=fit_answer)
    return _output(report, fmt, render.why_text(report))


async def cluster_snapshot(kube: Kube, namespace: str) -> tuple[Snapshot, list[str]]:
    """What the scheduler sees, as far as this user may read it; notes say what is left out."""
    notes = []
    try:
        cqs = (await kube.list(r.CLUSTER_QUEUE)).items
        flavors = (await kube.list(r.RESOURCE_FLAVOR)).items
    except Forbidden:
        raise CommandError("you may not list ClusterQueues and ResourceFlavors: the answer needs them") from None
    local_queues, _ = await _list_visible(kube, r.LOCAL_QUEUE, namespace)
    workloads_seen, complete = await _list_visible(kube, r.WORKLOAD, namespace)
    if not complete:
        notes.append(
            f"only the workloads of namespace {namespace} are counted (you may not list others): "
            "free quota and positions may be better than they are"
        )
    try:
        namespaces = (await kube.list(r.NAMESPACE)).items
    except Forbidden:
        namespaces = []
    parser = SnapshotParser()
    snapshot = parser.snapshot(
        cluster_queues=cqs,
        flavors=flavors,
        local_queues=local_queues,
        workloads=workloads_seen,
        namespaces=namespaces,
    )
    notes += [f"skipped malformed {s}" for s in parser.skipped]
    return snapshot, notes


async def fit(
    kube: Kube, manifest_text: str, *, namespace: str, now: datetime, fmt: render.OutputFormat = "table"
) -> str:
    """``turnstile fit -f``: what the scheduler would do now with the job in ``manifest_text``."""
    try:
        docs = [d for d in yaml.safe_load_all(manifest_text) if d]
    except yaml.YAMLError as exc:
        raise CommandError(f"the manifest is not YAML: {exc}") from None
    if len(docs) != 1:
        raise CommandError(f"give exactly one Job or Workload (the file holds {len(docs)} objects)")

    async def optional(resource: r.Resource) -> list[Object]:
        try:
            return (await kube.list(resource)).items
        except Forbidden:
            return []

    try:
        subject, candidate = candidate_workload(
            docs[0],
            namespace=namespace,
            workload_priority_classes=await optional(r.WORKLOAD_PRIORITY_CLASS),
            priority_classes=await optional(r.PRIORITY_CLASS),
        )
    except NotAJob as exc:
        raise CommandError(str(exc)) from None
    snapshot, notes = await cluster_snapshot(kube, candidate.namespace)
    answer = core_fit.would_fit(snapshot, candidate, now=now)
    text = fit_text(subject, answer) + "".join(f"\nNote: {n}" for n in notes)
    return _output({"subject": subject, "fit": answer, "notes": notes}, fmt, text)


async def set_stop_policy(
    kube: Kube,
    name: str,
    *,
    policy: StopPolicy,
    local_queue_namespace: str | None = None,
    dry_run: bool = False,
) -> str:
    """Stop (``Hold``: admit nothing new; ``HoldAndDrain``: also evict the admitted) or resume (``None``)."""
    resource = r.LOCAL_QUEUE if local_queue_namespace is not None else r.CLUSTER_QUEUE
    try:
        await kube.patch(
            resource,
            name,
            {"spec": {"stopPolicy": policy}},
            namespace=local_queue_namespace,
            dry_run=dry_run,
        )
    except NotFound:
        where = f" in namespace {local_queue_namespace!r}" if local_queue_namespace is not None else ""
        raise CommandError(f"{resource.kind.lower()} {name!r} not found{where}") from None
    what = f"{resource.kind.lower()}/{name}" + (f" -n {local_queue_namespace}" if local_queue_namespace else "")
    done = "resumed" if policy == "None" else f"stopped ({policy})"
    return f"{what} {done}" + (" (dry run)" if dry_run else "")


# -- connecting -----------------------------------------------------------------------------------------


def kubeconfig_path(flag: str | None) -> Path | None:
    """``--kubeconfig``, else the first existing file of ``$KUBECONFIG``, else ~/.kube/config; None if none."""
    if flag:
        return Path(flag)
    for candidate in filter(None, os.environ.get("KUBECONFIG", "").split(os.pathsep)):
        if Path(candidate).exists():
            return Path(candidate)
    default = Path.home() / ".kube" / "config"
    return default if default.exists() else None


def default_namespace(kubeconfig: Path | None, context: str | None) -> str:
    """The namespace of the kubeconfig context (as kubectl picks it), or the pod's own, or ``default``."""
    if kubeconfig is None:
        return _SA_NAMESPACE.read_text().strip() if _SA_NAMESPACE.exists() else "default"
    try:
        config = yaml.safe_load(kubeconfig.read_text()) or {}
    except (OSError, yaml.YAMLError):
        return "default"
    wanted = context or config.get("current-context")
    for entry in config.get("contexts") or []:
        if entry.get("name") == wanted:
            return str((entry.get("context") or {}).get("namespace") or "default")
    return "default"


async def _run(args: argparse.Namespace, kubeconfig: Path | None) -> str:
    from webhook.kube.apiserver import ApiServerKube

    fmt: render.OutputFormat = getattr(args, "output", "table")
    now = datetime.now(UTC)
    client = (
        ApiServerKube(kubeconfig=kubeconfig, context=args.context) if kubeconfig else ApiServerKube(in_cluster=True)
    )
    async with client as kube:
        if args.command == "queues":
            return await queues(kube, namespace=args.namespace if args.namespace_given else None, fmt=fmt)
        if args.command == "workloads":
            namespace = None if args.all_namespaces else args.namespace
            return await workloads(kube, namespace=namespace, pending_only=args.pending, now=now, fmt=fmt)
        if args.command == "why":
            return await why(kube, args.target, namespace=args.namespace, now=now, fmt=fmt)
        if args.command == "fit":
            return await fit(kube, _read_manifest(args.filename), namespace=args.namespace, now=now, fmt=fmt)
        if args.command == "migrate-storage":
            from webhook.controller import storagemigration

            return storagemigration.render(await storagemigration.migrate_storage(kube))
        policy: StopPolicy = "None" if args.command == "resume" else ("HoldAndDrain" if args.drain else "Hold")
        return await set_stop_policy(
            kube,
            args.name,
            policy=policy,
            local_queue_namespace=args.namespace if args.local_queue else None,
            dry_run=args.dry_run,
        )


def _read_manifest(name: str) -> str:
    if name == "-":
        return sys.stdin.read()
    try:
        return Path(name).read_text()
    except OSError as exc:
        raise CommandError(f"cannot read {name}: {exc.strerror}") from None


def main(args: argparse.Namespace) -> int:
    """Entry point from ``webhook.cli``: print the command's output, or one line of error and exit 1."""
    kubeconfig = kubeconfig_path(args.kubeconfig)
    if kubeconfig is None and "KUBERNETES_SERVICE_HOST" not in os.environ:
        print("turnstile: no kubeconfig found (use --kubeconfig or $KUBECONFIG)", file=sys.stderr)
        return 1
    args.namespace_given = args.namespace is not None
    if args.namespace is None:
        args.namespace = default_namespace(kubeconfig, args.context)
    try:
        print(asyncio.run(_run(args, kubeconfig)))
    except CommandError as e:
        print(f"turnstile: {e}", file=sys.stderr)
        return 1
    except KubeError as e:
        print(f"turnstile: {e.message}", file=sys.stderr)
        return 1
    return 0
