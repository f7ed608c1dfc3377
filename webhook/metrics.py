"""Prometheus metrics: Kueue's names and labels where the concept is shared, plus the webhook's own.

Owns: ``Metrics`` (one ``CollectorRegistry`` per instance, never the global one), the plain-argument methods the
reconciler and the webhook call on their hot paths, and the aiohttp app that serves ``/metrics`` on its own port.
Must not: decide anything, read the API server, or keep module-level state (two ``Metrics`` never share series).

Every series carries ``replica_role`` (leader | follower | standalone) like Kueue's, so a dashboard can sum the
leader's queue gauges without double counting followers. Gauges about queues are the leader's view: when the role
changes they are dropped and the new leader publishes its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import platform
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager
from typing import Final, Literal, TypeVar

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.metrics_core import Metric

from webhook.controller.telemetry import AttemptResult, ClusterQueueStatus

ReplicaRole = Literal["leader", "follower", "standalone"]

_CLUSTER_QUEUE_STATUSES: Final[tuple[ClusterQueueStatus, ...]] = ("pending", "active", "terminated")
_ROLE: Final = "replica_role"
_INF: Final = float("inf")
# How long a scrape waits for the reconciler process's families before showing the last ones it has.
RELAY_TIMEOUT_SECONDS: Final = 5.0
_M = TypeVar("_M", Counter, Gauge, Histogram)


def _kueue_wait_buckets(n: int) -> tuple[float, ...]:
    # Kueue's generateExponentialBuckets: 1, then 2.5 * 2^k (2.5, 5, 10, ...), n buckets in all.
    return (1.0, *(2.5 * 2**k for k in range(n - 1)))


WAIT_BUCKETS: Final = _kueue_wait_buckets(14)
# A scheduling attempt is CPU work on a snapshot: milliseconds, rarely seconds.
ATTEMPT_BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# The reason label of turnstile_webhook_errors_total, by HTTP status: a fixed, small set.
WEBHOOK_ERROR_REASONS: Final = {
    400: "malformed",
    404: "unknown-route",
    408: "body-timeout",
    413: "too-large",
    429: "overloaded",
    499: "client-closed",
    503: "unavailable",
}
# Admission answers from memory: most land well under a millisecond, the apiserver gives up at timeoutSeconds.
WEBHOOK_BUCKETS: Final = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)


class Metrics:
    """All of Turnstile's metrics in one registry. Cheap to update: a label lookup and an add."""

    def __init__(
        self,
        *,
        replica_role: ReplicaRole = "standalone",
        version: str = "",
        git_commit: str = "",
        build_date: str = "",
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._role: ReplicaRole = replica_role
        r = self.registry
        cq = ("cluster_queue", _ROLE)
        quota = ("cohort", "cluster_queue", "flavor", "resource", _ROLE)

        # -- health of the scheduler ------------------------------------------------------------
        self._attempts = Counter(
            "kueue_admission_attempts_total",
            "Admission attempts by result: success (something admitted) or inadmissible (nothing admitted).",
            ("result", _ROLE),
            registry=r,
        )
        self._pass_duration = Histogram(
            "turnstile_reconciler_pass_duration_seconds",
            "Time a pass of the reconciler's loop takes, the admission and preemption writes it waits for included "
            "(its count: the passes; a pass schedules only when something schedulable changed). Passes much longer "
            "than their admission attempts mean the API server is slow to answer those writes.",
            (_ROLE,),
            buckets=ATTEMPT_BUCKETS,
            registry=r,
        )
        self._information_share = Gauge(
            "turnstile_information_write_share",
            "Fraction of their rates that events, pending reasons and queue status keep: below 1 while the API "
            "server answers admission writes more than twice as slowly as in the last 5 minutes.",
            (_ROLE,),
            registry=r,
        )
        self._attempt_duration = Histogram(
            "kueue_admission_attempt_duration_seconds",
            "Latency of an admission attempt, by result.",
            ("result", _ROLE),
            buckets=ATTEMPT_BUCKETS,
            registry=r,
        )
        self._build_info = Gauge(
            "kueue_build_info",
            "Build information; the value is always 1.",
            ("git_version", "git_commit", "build_date", "python_version", "platform", _ROLE),
            registry=r,
        )
        self._build_labels = (
            version,
            git_commit,
            build_date,
            platform.python_version(),
            f"{sys.platform}/{platform.machine()}",
        )

        # -- ClusterQueue gauges (the leader's view) ----------------------------------------------
        self._pending = Gauge(
            "kueue_pending_workloads",
            "Pending workloads per ClusterQueue; status active = in the queue, inadmissible = set aside until "
            "something changes.",
            ("cluster_queue", "status", _ROLE),
            registry=r,
        )
        self._reserving = Gauge(
            "kueue_reserving_active_workloads",
            "Workloads holding a quota reservation, per ClusterQueue.",
            cq,
            registry=r,
        )
        self._admitted_active = Gauge(
            "kueue_admitted_active_workloads",
            "Admitted workloads that have not finished, per ClusterQueue.",
            cq,
            registry=r,
        )
        self._cq_status = Gauge(
            "kueue_cluster_queue_status",
            "1 for the ClusterQueue's current status (pending, active or terminated), 0 for the others.",
            ("cluster_queue", "status", _ROLE),
            registry=r,
        )
        # Fair sharing (issue 12): Kueue's names and labels; set only while fair sharing is on.
        self._cq_share = Gauge(
            "kueue_cluster_queue_weighted_share",
            "Largest ratio, over resources, of the ClusterQueue's usage above its quota to what its cohort could "
            "lend, in thousandths, divided by its weight; 0 when not borrowing.",
            ("cluster_queue", "cohort", _ROLE),
            registry=r,
        )
        self._cohort_share = Gauge(
            "kueue_cohort_weighted_share",
            "The same weighted share for a Cohort, against what its parent could lend.",
            ("cohort", _ROLE),
            registry=r,
        )
        self._usage = Gauge(
            "kueue_cluster_queue_resource_usage",
            "Quota used by admitted workloads, per ClusterQueue, flavor and resource.",
            quota,
            registry=r,
        )
        self._reservation = Gauge(
            "kueue_cluster_queue_resource_reservation",
            "Quota reserved (admitted or about to be), per ClusterQueue, flavor and resource.",
            quota,
            registry=r,
        )
        self._nominal = Gauge(
            "kueue_cluster_queue_nominal_quota",
            "Nominal quota per ClusterQueue, flavor and resource.",
            quota,
            registry=r,
        )
        self._borrowing = Gauge(
            "kueue_cluster_queue_borrowing_limit",
            "Borrowing limit per ClusterQueue, flavor and resource; +Inf when unlimited.",
            quota,
            registry=r,
        )
        self._lending = Gauge(
            "kueue_cluster_queue_lending_limit",
            "Lending limit per ClusterQueue, flavor and resource; +Inf when unlimited.",
            quota,
            registry=r,
        )

        # -- ClusterQueue counters and wait times -------------------------------------------------
        self._quota_reserved_total = Counter(
            "kueue_quota_reserved_workloads_total", "Workloads that got a quota reservation.", cq, registry=r
        )
        self._admitted_total = Counter("kueue_admitted_workloads_total", "Workloads admitted.", cq, registry=r)
        self._finished_total = Counter("kueue_finished_workloads_total", "Workloads finished.", cq, registry=r)
        self._evicted_total = Counter(
            "kueue_evicted_workloads_total",
            "Workloads evicted, by reason (Preempted, PodsReadyTimeout, Deactivated, ClusterQueueStopped, ...).",
            ("cluster_queue", "reason", _ROLE),
            registry=r,
        )
        self._preempted_total = Counter(
            "kueue_preempted_workloads_total",
            "Workloads preempted, by the ClusterQueue of the preemptor and the reason.",
            ("preempting_cluster_queue", "reason", _ROLE),
            registry=r,
        )
        self._quota_wait = Histogram(
            "kueue_quota_reserved_wait_time_seconds",
            "Time from creation (or the last requeue) to quota reservation.",
            cq,
            buckets=WAIT_BUCKETS,
            registry=r,
        )
        self._admission_wait = Histogram(
            "kueue_admission_wait_time_seconds",
            "Time from creation (or the last requeue) to admission.",
            cq,
            buckets=WAIT_BUCKETS,
            registry=r,
        )

        # -- the webhook ------------------------------------------------------------------------
        self._webhook_requests = Counter(
            "turnstile_webhook_requests_total",
            "Admission requests answered, by path and HTTP status code.",
            ("path", "code", _ROLE),
            registry=r,
        )
        self._webhook_duration = Histogram(
            "turnstile_webhook_request_duration_seconds",
            "Time to answer an admission request, by path.",
            ("path", _ROLE),
            buckets=WEBHOOK_BUCKETS,
            registry=r,
        )
        self._webhook_errors = Counter(
            "turnstile_webhook_errors_total",
            "Admission requests that failed (malformed review, internal error, cache not ready), by reason.",
            ("path", "reason", _ROLE),
            registry=r,
        )

        self._gauges: tuple[Gauge, ...] = (
            self._pending,
            self._reserving,
            self._admitted_active,
            self._cq_status,
            self._usage,
            self._reservation,
            self._nominal,
            self._borrowing,
            self._lending,
            self._cq_share,
            self._cohort_share,
            self._information_share,
        )
        # Label values each ClusterQueue has published, so a deleted queue leaves no series behind.
        self._series: dict[str, set[tuple[Counter | Gauge | Histogram, tuple[str, ...]]]] = {}
        self._build_info.labels(*self._build_labels, self._role).set(1)
        self._relayed: Mapping[str, bytes] = {}
        self._relay_source: Callable[[], Awaitable[None]] | None = None

    # -- role ---------------------------------------------------------------------------------------

    @property
    def replica_role(self) -> ReplicaRole:
        return self._role

    def set_replica_role(self, role: ReplicaRole) -> None:
        """Called on winning or losing the Lease. Queue gauges of the old role are dropped, counters kept."""
        if role == self._role:
            return
        self._role = role
        for gauge in self._gauges:
            gauge.clear()
        self._series = {cq: {s for s in series if not isinstance(s[0], Gauge)} for cq, series in self._series.items()}
        self._build_info.clear()
        self._build_info.labels(*self._build_labels, role).set(1)

    # -- scheduler ------------------------------------------------------------------------------------

    def admission_attempt(self, result: AttemptResult, seconds: float) -> None:
        """One scheduling cycle: ``success`` if it admitted at least one workload."""
        self._attempts.labels(result, self._role).inc()
        self._attempt_duration.labels(result, self._role).observe(seconds)

    def reconciler_pass(self, seconds: float) -> None:
        self._pass_duration.labels(self._role).observe(seconds)

    def set_information_share(self, share: float) -> None:
        self._information_share.labels(self._role).set(share)

    def quota_reserved(self, cluster_queue: str, wait_seconds: float) -> None:
        self._record(cluster_queue, self._quota_reserved_total).inc()
        self._record(cluster_queue, self._quota_wait).observe(wait_seconds)

    def workload_admitted(self, cluster_queue: str, wait_seconds: float) -> None:
        self._record(cluster_queue, self._admitted_total).inc()
        self._record(cluster_queue, self._admission_wait).observe(wait_seconds)

    def workload_finished(self, cluster_queue: str) -> None:
        self._record(cluster_queue, self._finished_total).inc()

    def workload_evicted(self, cluster_queue: str, reason: str) -> None:
        self._record(cluster_queue, self._evicted_total, reason).inc()

    def workload_preempted(self, preempting_cluster_queue: str, reason: str) -> None:
        """A victim was preempted; ``reason`` is the Preempted condition's (InClusterQueue, InCohortReclamation...)."""
        self._record(preempting_cluster_queue, self._preempted_total, reason).inc()

    def set_pending(self, cluster_queue: str, active: int, inadmissible: int) -> None:
        self._record(cluster_queue, self._pending, "active").set(active)
        self._record(cluster_queue, self._pending, "inadmissible").set(inadmissible)

    def set_active_workloads(self, cluster_queue: str, *, reserving: int, admitted: int) -> None:
        self._record(cluster_queue, self._reserving).set(reserving)
        self._record(cluster_queue, self._admitted_active).set(admitted)

    def set_cluster_queue_status(self, cluster_queue: str, status: ClusterQueueStatus) -> None:
        for candidate in _CLUSTER_QUEUE_STATUSES:
            self._record(cluster_queue, self._cq_status, candidate).set(1 if candidate == status else 0)

    def set_cluster_queue_quota(
        self,
        cluster_queue: str,
        *,
        flavor: str,
        resource: str,
        nominal: float,
        borrowing_limit: float | None = None,
        lending_limit: float | None = None,
        cohort: str = "",
    ) -> None:
        """Quota in the resource's base unit (cores, bytes, count). A limit of None is unlimited (+Inf)."""
        labels = (cohort, cluster_queue, flavor, resource)
        self._record_quota(cluster_queue, self._nominal, labels).set(nominal)
        self._record_quota(cluster_queue, self._borrowing, labels).set(
            _INF if borrowing_limit is None else borrowing_limit
        )
        self._record_quota(cluster_queue, self._lending, labels).set(_INF if lending_limit is None else lending_limit)

    def set_cluster_queue_usage(
        self,
        cluster_queue: str,
        *,
        flavor: str,
        resource: str,
        reserved: float,
        used: float,
        cohort: str = "",
    ) -> None:
        """``reserved``: quota held by workloads with a reservation; ``used``: by admitted workloads."""
        labels = (cohort, cluster_queue, flavor, resource)
        self._record_quota(cluster_queue, self._reservation, labels).set(reserved)
        self._record_quota(cluster_queue, self._usage, labels).set(used)

    def set_weighted_share(self, cluster_queue: str, share: float, *, cohort: str = "") -> None:
        self._record_quota(cluster_queue, self._cq_share, (cluster_queue, cohort)).set(share)

    def set_cohort_weighted_share(self, cohort: str, share: float) -> None:
        self._cohort_share.labels(cohort, self._role).set(share)

    def forget_cluster_queue(self, cluster_queue: str) -> None:
        """Remove every series of a deleted ClusterQueue."""
        for metric, labels in self._series.pop(cluster_queue, ()):
            with contextlib.suppress(KeyError):  # already gone: cleared by a role change
                metric.remove(*labels)

    # -- webhook --------------------------------------------------------------------------------------

    def observe_webhook(self, path: str, code: int, seconds: float) -> None:
        """One admission request answered. ``path`` is the route (``/mutate-batch-v1-job``), never a query.
        An answer of 400 or more is also an error, by a reason named after its status (``webhook_error``)."""
        self._webhook_requests.labels(path, str(code), self._role).inc()
        self._webhook_duration.labels(path, self._role).observe(seconds)
        if code >= 400:
            self.webhook_error(path, WEBHOOK_ERROR_REASONS.get(code, "internal" if code >= 500 else "refused"))

    def webhook_error(self, path: str, reason: str) -> None:
        """``reason`` is a short fixed word (``malformed``, ``internal``, ``not-ready``): keep cardinality bounded."""
        self._webhook_errors.labels(path, reason, self._role).inc()

    # -- exposition -----------------------------------------------------------------------------------

    def families(self) -> dict[str, bytes]:
        """Every family rendered as exposition text, by name, as ``relay`` takes them from another process.

        Rendered here rather than sent as objects: unpickling some ten thousand samples a second in the webhook
        process held its interpreter for up to 70 ms at a time (a third of its busy time in the issue-18 soak), and
        every review waited meanwhile; a dict of bytes unpickles in microseconds. The renderer's CPU is this
        (niced reconciler) process's."""
        return {family.name: generate_latest(_Families([family])) for family in self.registry.collect()}

    def relay(self, families: Mapping[str, bytes]) -> None:
        """Families rendered by the other process of this replica (the reconciler's), shown with ours.

        For each name, our own samples win when we have any (``kueue_build_info``, the webhook's counters), else
        the relayed family is shown: one family per name, so the page stays valid exposition text.
        """
        self._relayed = families

    def relay_from(self, source: Callable[[], Awaitable[None]] | None) -> None:
        """``source`` asks the other process for its families (they arrive through ``relay``); awaited before each
        page is rendered. Pulled per scrape rather than pushed on a timer: rendering every family once a second was
        about a quarter of the reconciler process's CPU, for pages scraped every 15-30 s, or never."""
        self._relay_source = source

    async def refresh(self) -> None:
        """Fetch the other process's families now; past ``RELAY_TIMEOUT_SECONDS`` (a busy or restarting
        reconciler) the page shows the last ones received."""
        source = self._relay_source
        if source is None:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(RELAY_TIMEOUT_SECONDS):
                await source()

    def render(self) -> bytes:
        """The registry (and the relayed families) in Prometheus text format."""
        others = dict(self._relayed)
        parts: list[bytes] = []
        for family in self.registry.collect():
            other = others.pop(family.name, None)
            parts.append(generate_latest(_Families([family])) if family.samples or other is None else other)
        parts.extend(others.values())
        return b"".join(parts)

    # -- internals ------------------------------------------------------------------------------------

    def _record(self, cluster_queue: str, metric: _M, *extra: str) -> _M:
        labels = (cluster_queue, *extra, self._role)
        self._series.setdefault(cluster_queue, set()).add((metric, labels))
        return metric.labels(*labels)

    def _record_quota(self, cluster_queue: str, metric: Gauge, labels: tuple[str, ...]) -> Gauge:
        full = (*labels, self._role)
        self._series.setdefault(cluster_queue, set()).add((metric, full))
        return metric.labels(*full)


class _Families:
    """A fixed list of families as ``generate_latest`` takes a registry."""

    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self) -> Iterator[Metric]:
        return iter(self._families)


_METRICS_KEY: Final = web.AppKey("metrics", Metrics)


async def _serve_metrics(request: web.Request) -> web.Response:
    metrics = request.app[_METRICS_KEY]
    await metrics.refresh()
    body = metrics.render()
    # aiohttp refuses a charset inside content_type=, so the header is set whole.
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


def metrics_app(metrics: Metrics) -> web.Application:
    """An app serving ``GET /metrics``, meant for its own port (plain HTTP, scraped inside the cluster)."""
    app = web.Application()
    app[_METRICS_KEY] = metrics
    app.router.add_get("/metrics", _serve_metrics)
    return app


@asynccontextmanager
async def serving(metrics: Metrics, *, host: str = "0.0.0.0", port: int = 8080) -> AsyncIterator[int]:
    """Serve ``/metrics`` until the block ends; yields the bound port (useful with ``port=0``)."""
    runner = web.AppRunner(metrics_app(metrics), access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
        yield int(runner.addresses[0][1])
    finally:
        await runner.cleanup()
