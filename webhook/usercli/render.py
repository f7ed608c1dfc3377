"""Text for people (aligned tables, kubectl style) and for programs (JSON, YAML) from the CLI's views.

Owns: column layout, ages, and the conversion of views to camelCase dicts for ``-o json|yaml``.
Must not: do I/O or compute anything about queues (``views`` does).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any, Literal

import yaml

from webhook.usercli.views import ClusterQueueView, LocalQueueView, WhyReport, WorkloadView

OutputFormat = Literal["table", "json", "yaml"]


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Columns padded to their widest cell, separated by three spaces, as ``kubectl get`` prints them."""
    cells = [[str(h) for h in headers], *[["-" if c is None or c == "" else str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return "\n".join("   ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells)


def age(seconds: int) -> str:
    """kubectl's short ages: 45s, 12m, 3h, 5d."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def to_data(value: Any) -> Any:
    """Views as plain JSON-ready data with camelCase keys (the convention of Kubernetes' own JSON)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {_camel(f.name): to_data(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple):
        return [to_data(v) for v in value]
    if isinstance(value, dict):
        return {k: to_data(v) for k, v in value.items()}
    return value


def dump(value: Any, fmt: Literal["json", "yaml"]) -> str:
    data = to_data(value)
    if fmt == "json":
        return json.dumps(data, indent=2)
    return yaml.safe_dump(data, sort_keys=False).rstrip("\n")


# -- queues ---------------------------------------------------------------------------------------------


def _limit(value: str | None) -> str:
    return "unlimited" if value is None else value


def cluster_queues_table(queues: Sequence[ClusterQueueView]) -> str:
    head = table(
        ["CLUSTERQUEUE", "COHORT", "STATUS", "STOP POLICY", "PENDING", "RESERVING", "ADMITTED"],
        [
            [q.name, q.cohort, "Active" if q.active else "Inactive", q.stop_policy, q.pending, q.reserving, q.admitted]
            for q in queues
        ],
    )
    quota_rows = [
        [
            q.name,
            r.flavor,
            r.resource,
            f"{r.reserved}/{r.nominal}",
            "-" if r.reserved_percent is None else f"{r.reserved_percent}%",
            r.used,
            r.borrowed,
            _limit(r.borrowing_limit),
            _limit(r.lending_limit),
        ]
        for q in queues
        for r in q.quota
    ]
    if not quota_rows:
        return head
    quota = table(
        [
            "CLUSTERQUEUE",
            "FLAVOR",
            "RESOURCE",
            "RESERVED/NOMINAL",
            "%",
            "IN USE",
            "BORROWED",
            "BORROWING LIMIT",
            "LENDING LIMIT",
        ],
        quota_rows,
    )
    return f"{head}\n\n{quota}"


def local_queues_table(queues: Sequence[LocalQueueView]) -> str:
    return table(
        ["NAMESPACE", "LOCALQUEUE", "CLUSTERQUEUE", "STOP POLICY", "PENDING", "RESERVING", "ADMITTED", "RESERVED"],
        [
            [
                q.namespace,
                q.name,
                q.cluster_queue,
                q.stop_policy,
                q.pending,
                q.reserving,
                q.admitted,
                ", ".join(f"{u.flavor}/{u.resource}={u.reserved}" for u in q.usage),
            ]
            for q in queues
        ],
    )


# -- workloads ------------------------------------------------------------------------------------------


def _position(w: WorkloadView) -> str:
    return f"{w.position}/{w.pending_in_cluster_queue}" if w.position is not None else "-"


def workloads_table(workloads: Sequence[WorkloadView], *, all_namespaces: bool) -> str:
    headers = ["NAME", "OWNER", "LOCALQUEUE", "CLUSTERQUEUE", "PRIORITY", "STATE", "POSITION", "REASON", "AGE"]
    rows = [
        [
            w.name,
            w.owner,
            w.local_queue,
            w.cluster_queue,
            w.priority,
            w.state,
            _position(w),
            w.reason,
            age(w.age_seconds),
        ]
        for w in workloads
    ]
    if all_namespaces:
        headers = ["NAMESPACE", *headers]
        rows = [[w.namespace, *row] for w, row in zip(workloads, rows, strict=True)]
    return table(headers, rows)


def why_text(report: WhyReport) -> str:
    w = report.workload
    lines: list[str] = []
    if w is None:
        lines.append(f"{report.subject}: no Workload")
    else:
        lines.append(f"{report.subject} -> Workload {w.namespace}/{w.name}")
        target = f" -> ClusterQueue {w.cluster_queue}" if w.cluster_queue else ""
        lines.append(f"  Queue:     LocalQueue {w.namespace}/{w.local_queue}{target}")
        lines.append(f"  Priority:  {w.priority}" + (f" ({w.priority_class})" if w.priority_class else ""))
        reason = f" ({w.reason})" if w.reason and w.reason != w.state else ""
        lines.append(f"  State:     {w.state}{reason}")
        if w.message:
            lines.append(f"  Why:       {w.message}")
        if w.position is not None:
            lines.append(
                f"  Position:  {w.position} of {w.pending_in_cluster_queue} pending in ClusterQueue {w.cluster_queue}"
            )
        for ps in report.pod_sets:
            per_pod = ", ".join(f"{k}={v}" for k, v in ps.per_pod.items()) or "nothing"
            total = ", ".join(f"{k}={v}" for k, v in ps.total.items()) or "nothing"
            lines.append(f"  Requests:  pod set {ps.name}: {ps.count} x ({per_pod}) = {total}")
    if report.ahead:
        lines.append("")
        lines.append("Ahead of it:")
        lines.append(
            _indent(
                table(
                    ["NAMESPACE", "NAME", "PRIORITY", "REASON", "AGE"],
                    [[a.namespace, a.name, a.priority, a.reason, age(a.age_seconds)] for a in report.ahead],
                )
            )
        )
    if report.cluster_queue is not None:
        lines.append("")
        lines.append(f"ClusterQueue {report.cluster_queue.name}:")
        lines.append(_indent(cluster_queues_table([report.cluster_queue])))
    if report.fit is not None:
        from webhook.usercli.candidate import fit_text

        lines.append("")
        lines.append("The scheduler, asked now (as `turnstile fit` asks it):")
        lines.append(_indent(fit_text(report.subject, report.fit, exists=True)))
    if report.notes:
        lines.append("")
        lines.extend(f"Note: {note}" for note in report.notes)
    return "\n".join(lines)


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" if line else line for line in text.splitlines())
