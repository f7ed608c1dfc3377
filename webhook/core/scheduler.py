"""The scheduling pass: a snapshot in, admissions, preemptions and pending reasons out.

Owns: ``schedule``, which resolves each pending workload to its ClusterQueue, orders every queue, admits
all-or-nothing (or partially, down to ``minCount``), chooses preemption victims and explains what stays.
Must not: do I/O or read the clock (``now`` is passed in), or mutate its inputs.

How one pass goes beyond Kueue's cycle. Kueue pops one head per ClusterQueue per cycle, so a deep queue drains
one workload per cycle (kueue#14477). Here the pass runs those cycles back to back in memory until every queue
is exhausted or blocked, which admits everything that fits at once while keeping Kueue's guarantees:

* within a queue, workloads are considered strictly in order (priority, then creation time); StrictFIFO stops
  at a head that does not fit, BestEffortFIFO moves on;
* each round offers one head per queue and handles non-borrowing heads before borrowing ones, then higher
  priority, then older, as Kueue orders a cycle;
* deliberately better than Kueue: the pass runs in two phases. In the first, a head that would borrow (or
  preempt) pauses its queue; only in the second may queues borrow and preempt. So within one pass no queue
  lends out quota that a cohort member's queued workload could use without borrowing, which in Kueue can
  admit a borrower in one cycle only to reclaim from it in the next.

Usage only grows during a pass (admissions, and quota held for preemptors whose victims still run), so a
workload that does not fit now will not fit later in the same pass: answers are memoised per queue and
workload shape, and in a BestEffortFIFO queue a shape that failed is left behind whole (each queue reads its
workloads as a merge of ``core.backlog`` lines, one per LocalQueue and shape). With a backlog kept by the caller
and only the front of each queue explained (``positions``), a pass over 12,000 waiting workloads of which none fit
touches a few hundred of them.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from datetime import datetime
from typing import Final

from webhook.api import constants
from webhook.api.clusterqueue import NEVER, STRICT_FIFO, ClusterQueue
from webhook.api.quantity import Quantity
from webhook.api.selector import matches
from webhook.api.workload import Workload
from webhook.core.admissionfairsharing import USAGE_BASED, AdmissionFairSharing, entry_penalty, score
from webhook.core.assignment import FIT, PREEMPT, Assignment, FlavorAssigner
from webhook.core.backlog import Backlog
from webhook.core.decisions import (
    RETRY_ON_PREEMPTED,
    RETRY_ON_QUEUE_CHANGED,
    RETRY_ON_QUOTA_FREED,
    RETRY_ON_TIME,
    AdmissionDecision,
    PendingDecision,
    PodSetAdmission,
    PreemptionDecision,
    SchedulingResult,
    Victim,
    victim_message,
)
from webhook.core.demand import Demand, DemandCache
from webhook.core.fairpreemption import find_fair_victims
from webhook.core.fairsharing import FairSharing, Shares, Tournament, fair_note, status_value
from webhook.core.preemption import Holder, Preemptor, candidate_order, find_victims
from webhook.core.quota import QuotaBook
from webhook.core.reasons import explain_shortage
from webhook.core.snapshot import Snapshot
from webhook.core.usage import usage_nano
from webhook.core.waitingline import ADMITTED, FAILED, ORDER, PREEMPTING, Entry, Lines, WaitingQueue

_ADVANCE: Final = 0
_PAUSE: Final = 1  # phase one only: wait for phase two
_STOP: Final = 2  # StrictFIFO head does not fit: the queue is blocked

NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"


_BY_KEY = operator.attrgetter("namespace", "name")  # a Workload's key, without a Python call per item


def schedule(
    snapshot: Snapshot,
    *,
    now: datetime,
    fair_sharing: FairSharing | None = None,
    admission_fair_sharing: AdmissionFairSharing | None = None,
    demands: DemandCache | None = None,
    backlog: Backlog | None = None,
    positions: int | None = None,
) -> SchedulingResult:
    """One scheduling pass over ``snapshot`` at time ``now``; deterministic for the same snapshot.

    ``demands``: a cache of the workloads' demands kept by the caller from pass to pass (a fresh one otherwise).
    ``backlog``: the pending workloads of ``snapshot.workloads``, kept by the caller from pass to pass (its
    ``demands`` are then used); built from the snapshot otherwise. It must hold exactly the snapshot's pending
    workloads. ``positions``: explain only the first ``positions`` waiting in each ClusterQueue (every workload
    that cannot queue is explained all the same); all of them when None.
    """
    fair, afs = fair_sharing or FairSharing(), admission_fair_sharing or AdmissionFairSharing()
    if backlog is None:
        backlog = Backlog.of(snapshot.workloads, demands)
    return _Pass(snapshot, now, fair, afs, backlog).run(positions)


class _Pass:
    def __init__(
        self, snapshot: Snapshot, now: datetime, fair: FairSharing, afs: AdmissionFairSharing, backlog: Backlog
    ) -> None:
        self.now = now
        self.demands = backlog.demands
        self.fair = fair
        self.flavors = {f.name: f for f in snapshot.flavors}
        cqs = sorted(snapshot.cluster_queues, key=lambda c: c.name)
        self.cqs = {c.name: c for c in cqs}
        self.book = QuotaBook(cqs, snapshot.cohorts)
        # The book once every victim chosen in this pass is gone and its preemptor admitted: preemption is
        # simulated here, admission is checked against ``book`` (where victims still run).
        self.future = QuotaBook(cqs, snapshot.cohorts)
        self.shares: Shares | None = None
        self.future_shares: Shares | None = None
        if fair.enabled:
            weights = {c.name: c.weight for c in cqs}
            cohort_weights = {c.name: c.weight for c in snapshot.cohorts}
            self.shares = Shares(self.book, weights, cohort_weights)
            self.future_shares = Shares(self.future, weights, cohort_weights)
        self.local_queues = {(lq.namespace, lq.name): lq for lq in snapshot.local_queues}
        self.namespaces = snapshot.namespaces
        self.admitted: list[AdmissionDecision] = []
        self.preemptions: list[PreemptionDecision] = []
        self.pending: list[PendingDecision] = []
        self.taken: dict[tuple[str, str], Holder] = {}
        self.inactive: dict[str, tuple[str, str]] = {c.name: r for c in cqs if (r := self._inactive_reason(c))}

        self.afs = afs
        self.penalties: dict[tuple[str, str], dict[str, float]] = {}
        self.scores: dict[tuple[str, str], float] = {}
        self.holders: dict[str, list[Holder]] = {}  # by queue, in candidate order
        self.pools: dict[str, list[str]] = {}  # queues by the tree they share (root cohort, or a queue alone)
        self.queues: dict[str, WaitingQueue] = {}
        # No global sort: usage sums are exact integers, holders and entries are sorted by total orders below,
        # and the few workloads that cannot queue are sorted on their own, so the input order never shows.
        workloads = snapshot.workloads
        self._count_holders(cqs, workloads)
        self._open_queues(cqs)
        self._enqueue_pending(backlog)
        self._order_queues(workloads)

    def _count_holders(self, cqs: list[ClusterQueue], workloads: Sequence[Workload]) -> None:
        """1. Usage of workloads that already hold quota; they are the only possible victims."""
        for cq in cqs:
            self.pools.setdefault(self.book.tree_of(cq.name), []).append(cq.name)
        for wl in workloads:
            if not wl.holds_quota or wl.admission is None or wl.admission.cluster_queue not in self.cqs:
                continue
            cq = self.cqs[wl.admission.cluster_queue]
            usage = usage_nano(wl)
            self.book.queues[cq.name].add(usage)
            self.future.queues[cq.name].add(usage)
            holder = Holder(wl.key, wl.uid, cq.name, wl.priority, wl.created, wl.quota_reserved_at, usage)
            self.holders.setdefault(cq.name, []).append(holder)
        for listed in self.holders.values():
            listed.sort(key=candidate_order)

    def _open_queues(self, cqs: list[ClusterQueue]) -> None:
        """2. One queue per active ClusterQueue, with its assigner."""
        held_in_pool = {tree: sum(len(self.holders.get(n, ())) for n in names) for tree, names in self.pools.items()}
        for cq in cqs:
            if cq.name in self.inactive:
                continue
            quota = self.book.queues[cq.name]
            assigner = FlavorAssigner(cq, quota, self.flavors)
            own = len(self.holders.get(cq.name, ()))
            in_pool = held_in_pool[self.book.tree_of(cq.name)]
            assigner.preemption_possible = (cq.preemption.within_cluster_queue != NEVER and own > 0) or (
                cq.cohort is not None and cq.preemption.reclaim_within_cohort != NEVER and in_pool > own
            )
            self.queues[cq.name] = WaitingQueue(cq, quota, assigner)

    def _enqueue_pending(self, backlog: Backlog) -> None:
        """3. Each queue's lines of pending workloads, or straight to a pending reason (in key order) for those that
        cannot queue."""
        now = self.now
        resolved: dict[tuple[str, str], WaitingQueue | tuple[str | None, tuple[str, str]]] = {}
        unqueued: list[tuple[Workload, str | None, tuple[str, str], str]] = []
        for lq_key, by_shape in backlog.local_queues():
            target = resolved[lq_key] = self._resolve(lq_key)
            if isinstance(target, tuple):
                unqueued.extend((wl, *target, RETRY_ON_QUEUE_CHANGED) for line in by_shape.values() for wl in line)
                continue
            for demand, line in by_shape.items():
                target.lines.append((demand, line))
                target.total += len(line)
        due: dict[tuple[str, Demand], list[Workload]] = {}  # requeued workloads whose backoff is over
        for wl in backlog.timed():
            if wl.requeue_at is not None and wl.requeue_at > now:
                backoff = f"requeued after eviction; backoff until {wl.requeue_at.isoformat()}"
                unqueued.append((wl, None, (constants.REASON_PENDING, backoff), RETRY_ON_TIME))
                continue
            queue_key = (wl.namespace, wl.queue_name)
            found = resolved.get(queue_key)
            target = found if found is not None else resolved.setdefault(queue_key, self._resolve(queue_key))
            if isinstance(target, tuple):
                unqueued.append((wl, *target, RETRY_ON_QUEUE_CHANGED))
                continue
            due.setdefault((target.cq.name, self.demands.of(wl)), []).append(wl)
        for (due_in, demand), line in due.items():  # the lines' order shows nowhere: orders are unique
            line.sort(key=ORDER)
            q = self.queues[due_in]
            q.lines.append((demand, line))
            q.total += len(line)
        for q in self.queues.values():
            q.source = Lines(q.lines) if q.lines else None
        unqueued.sort(key=lambda u: u[0].key)
        for wl, cq_name, (reason, message), retry_on in unqueued:
            self._pend(wl, cq_name, reason, message, retry_on)

    def _order_queues(self, workloads: Sequence[Workload]) -> None:
        """4. Each queue in admission order. With admission fair sharing, the LocalQueue that used least lately (per
        its weight) goes first; what it was admitted since its last sample counts as Kueue's entry penalty."""
        afs = self.afs
        fair_queues = {n for n, q in self.queues.items() if afs.enabled and q.cq.admission_mode == USAGE_BASED}
        # Penalties are float sums: added in key order, so the input order cannot change them.
        for wl in sorted(workloads, key=_BY_KEY) if fair_queues else ():
            lq = self.local_queues.get((wl.namespace, wl.queue_name))
            if lq is None or wl.admission is None or wl.admission.cluster_queue not in fair_queues:
                continue
            if wl.holds_quota and (lq.last_update is None or wl.quota_reserved_at >= lq.last_update):
                self._add_penalty((wl.namespace, wl.queue_name), usage_nano(wl))
        for key, lq in self.local_queues.items():
            if lq.cluster_queue in fair_queues:
                self.scores[key] = score(lq.consumed, lq.weight, afs, self.penalties.get(key))
        for q in self.queues.values():
            if q.cq.name in fair_queues:  # reordered as the pass goes: every entry taken now
                q.take_all()
                q.entries.sort(key=self._entry_key)
                q.by_local_queue = {}
                for e in q.entries:
                    q.by_local_queue.setdefault((e.workload.namespace, e.workload.queue_name), []).append(e)

    # -- resolution -------------------------------------------------------------------------------------

    def _inactive_reason(self, cq: ClusterQueue) -> tuple[str, str] | None:
        if cq.terminating:
            return constants.REASON_INADMISSIBLE, f"ClusterQueue {cq.name} is terminating"
        if not cq.active:
            return constants.REASON_SUSPENDED, f"ClusterQueue {cq.name} is stopped (stopPolicy {cq.stop_policy})"
        for group in cq.resource_groups:
            for f in group.flavors:
                if f.name not in self.flavors:
                    return (
                        constants.REASON_MISCONFIGURED,
                        f"ClusterQueue {cq.name} uses ResourceFlavor {f.name}, which does not exist",
                    )
        cycle = self.book.cycle_of(cq)
        if cycle is not None:
            return (
                constants.REASON_MISCONFIGURED,
                f"ClusterQueue {cq.name} is in cohort {cq.cohort}, whose parents form a cycle ({cycle})",
            )
        return None

    def _resolve(self, lq_key: tuple[str, str]) -> WaitingQueue | tuple[str | None, tuple[str, str]]:
        namespace, queue_name = lq_key
        lq = self.local_queues.get(lq_key)
        if lq is None:
            return None, (
                constants.REASON_MISCONFIGURED,
                f"LocalQueue {queue_name} doesn't exist in namespace {namespace}",
            )
        if not lq.active:
            return lq.cluster_queue, (
                constants.REASON_SUSPENDED,
                f"LocalQueue {lq.name} is stopped (stopPolicy {lq.stop_policy})",
            )
        cq = self.cqs.get(lq.cluster_queue)
        if cq is None:
            return lq.cluster_queue, (constants.REASON_MISCONFIGURED, f"ClusterQueue {lq.cluster_queue} doesn't exist")
        if cq.name in self.inactive:
            return cq.name, self.inactive[cq.name]
        labels = self.namespaces.get(namespace, {NAMESPACE_NAME_LABEL: namespace})
        if cq.namespace_selector is None or not matches(cq.namespace_selector, labels):
            return cq.name, (
                constants.REASON_MISCONFIGURED,
                f"namespace {namespace} doesn't match the namespaceSelector of ClusterQueue {cq.name}",
            )
        return self.queues[cq.name]

    # -- the pass -----------------------------------------------------------------------------------------

    def run(self, positions: int | None) -> SchedulingResult:
        rounds = self._rounds if self.shares is None else self._fair_rounds
        rounds(phase=1)
        rounds(phase=2)
        self._explain(positions)
        result = SchedulingResult(tuple(self.admitted), tuple(self.preemptions), tuple(self.pending))
        shares = self.shares
        if shares is None:
            return result
        return SchedulingResult(
            result.admitted,
            result.preemptions,
            result.pending,
            tuple((n, status_value(shares.share(q))) for n, q in sorted(self.book.queues.items())),
            tuple((n, status_value(shares.share(c))) for n, c in sorted(self.book.cohorts.items())),
        )

    def _fair_rounds(self, *, phase: int) -> None:
        """Fair sharing: one head at a time per tree, the winner of Kueue's tournament on current usage."""
        assert self.shares is not None
        tournament = Tournament(self.shares)
        for q in self.queues.values():
            if not q.blocked and q.head() is not None:
                self._offer(tournament, q)
        while winners := tournament.winners():
            for name in winners:
                q = self.queues[name]
                e = q.entries[q.cursor]
                step = self._process(q, e, q.assigner.assign(e.demand, e.demand.full_counts()), phase=phase)
                if step == _ADVANCE:
                    q.cursor += 1
                    self._offer(tournament, q)
                else:  # paused until phase two, or a blocked StrictFIFO queue
                    q.blocked = q.blocked or step == _STOP
                    tournament.offer(name, None)

    def _offer(self, tournament: Tournament, q: WaitingQueue) -> None:
        if not self._skip_known_failures(q):
            tournament.offer(q.cq.name, None)
            return
        e = q.entries[q.cursor]
        a = q.assigner.assign(e.demand, e.demand.full_counts())
        tournament.offer(q.cq.name, (q.cq.name, a.usage, e.order))

    def _rounds(self, *, phase: int) -> None:
        active = [q for q in self.queues.values() if not q.blocked and q.head() is not None]
        while active:
            # 1. Nominate each queue's head (skipping heads whose shape already failed in this queue).
            heads: list[tuple[tuple[int, tuple[int, float, str, str, str]], WaitingQueue, Entry, Assignment, int]] = []
            for q in active:
                if not self._skip_known_failures(q):
                    continue
                e = q.entries[q.cursor]
                a = q.assigner.assign(e.demand, e.demand.full_counts())
                heads.append(((a.level, e.order), q, e, a, q.quota.pool_version()))
            # 2. By borrowing level (non-borrowing first, then borrowing from nearer cohorts), then priority, then
            # age, as Kueue orders a cycle.
            heads.sort(key=lambda h: h[0])
            active = []
            for _, q, e, a, version in heads:
                if q.quota.pool_version() != version:
                    a = q.assigner.assign(e.demand, e.demand.full_counts())
                step = self._process(q, e, a, phase=phase)
                if step == _ADVANCE:
                    q.cursor += 1
                    if q.head() is not None:
                        active.append(q)
                elif step == _STOP:
                    q.blocked = True

    def _skip_known_failures(self, q: WaitingQueue) -> bool:
        """Fail heads whose shape already failed here; False when the queue is exhausted or blocked."""
        while True:
            if q.by_local_queue is not None:
                self._next_by_usage(q)
            e = q.head()
            if e is None:
                return False
            if e.demand not in q.failed_shapes:
                return True
            e.outcome = FAILED
            if q.cq.queueing_strategy == STRICT_FIFO:
                q.blocked = True
                return False
            q.cursor += 1

    def _process(self, q: WaitingQueue, e: Entry, a: Assignment, *, phase: int) -> int:
        # 1. Fits whole.
        if a.mode == FIT:
            if phase == 1 and a.borrowing:
                return _PAUSE
            self._admit(q, e, a)
            return _ADVANCE
        # 2. Fits whole once victims are gone.
        if a.mode == PREEMPT:
            if phase == 1:
                return _PAUSE
            if self._preempt(q, e, a):
                return _ADVANCE
            e.preemption_failed = True
        # 3. Fits with fewer pods (minCount), all-or-nothing above it.
        partial = self._partial(q, e)
        if partial is not None:
            if phase == 1 and partial.borrowing:
                return _PAUSE
            self._admit(q, e, partial)
            return _ADVANCE
        # 4. Does not fit: remember the shape, then block (StrictFIFO) or move on (BestEffortFIFO), leaving the
        # rest of that shape behind.
        e.outcome = FAILED
        q.failed_shapes[e.demand] = a.mode
        if q.cq.queueing_strategy == STRICT_FIFO:
            return _STOP
        if q.source is not None:
            q.source.drop(e.demand)
        return _ADVANCE

    def _partial(self, q: WaitingQueue, e: Entry) -> Assignment | None:
        index = e.demand.partial_index
        if index is None:
            return None
        pod_set = e.demand.pod_sets[index]
        assert pod_set.min_count is not None
        full = list(e.demand.full_counts())
        lo, hi, best = pod_set.min_count, pod_set.count - 1, None
        while lo <= hi:  # fitting is monotone in the count: binary search the largest count that fits
            mid = (lo + hi) // 2
            full[index] = mid
            a = q.assigner.assign(e.demand, tuple(full))
            if a.mode == FIT:
                best, lo = a, mid + 1
            else:
                hi = mid - 1
        return best

    def _next_by_usage(self, q: WaitingQueue) -> None:
        """Admission fair sharing: bring the head of the LocalQueue with the lowest usage now (penalties of this
        pass included) to the cursor. Each LocalQueue's entries keep their order, so its head is its first entry
        not yet behind the cursor; the rest of the list keeps the order of the start of the pass."""
        assert q.by_local_queue is not None
        best: Entry | None = None
        for key, listed in q.by_local_queue.items():
            done = q.done_in_local_queue.get(key, 0)
            while done < len(listed) and listed[done].outcome:
                done += 1
            q.done_in_local_queue[key] = done
            if done < len(listed) and (best is None or self._entry_key(listed[done]) < self._entry_key(best)):
                best = listed[done]
        if best is not None and q.entries[q.cursor] is not best:
            q.entries.insert(q.cursor, q.entries.pop(q.entries.index(best, q.cursor)))

    def _entry_key(self, e: Entry) -> tuple[float, tuple[int, float, str, str, str]]:
        return self.scores.get((e.workload.namespace, e.workload.queue_name), 0.0), e.order

    def _add_penalty(self, lq_key: tuple[str, str], usage: dict[tuple[str, str], int]) -> None:
        requests: dict[str, float] = {}
        for (_, resource), nano in usage.items():
            requests[resource] = requests.get(resource, 0.0) + nano / 1e9
        total = self.penalties.setdefault(lq_key, {})
        for resource, amount in entry_penalty(requests, self.afs).items():
            total[resource] = total.get(resource, 0.0) + amount

    def _admit(self, q: WaitingQueue, e: Entry, a: Assignment) -> None:
        lq_key = (e.workload.namespace, e.workload.queue_name)
        if lq_key in self.scores:  # admission fair sharing: the LocalQueue's usage grows at once, in this pass too
            self._add_penalty(lq_key, a.usage)
            lq = self.local_queues[lq_key]
            self.scores[lq_key] = score(lq.consumed, lq.weight, self.afs, self.penalties[lq_key])
        q.quota.add(a.usage)
        self.future.queues[q.cq.name].add(a.usage)
        e.outcome = ADMITTED
        wl = e.workload
        pod_sets = []
        for pod_set, count, flavors in zip(wl.pod_sets, a.counts, a.flavors, strict=True):
            usage = {r: pod_set.requests[r] * count for r in flavors if r in pod_set.requests}
            if "pods" in flavors:
                usage["pods"] = Quantity.from_units(count)
            pod_sets.append(PodSetAdmission(pod_set.name, dict(sorted(flavors.items())), usage, count))
        partial = a.counts != e.demand.full_counts()
        self.admitted.append(AdmissionDecision(wl.key, wl.uid, q.cq.name, tuple(pod_sets), a.borrowing, partial))

    def _preempt(self, q: WaitingQueue, e: Entry, a: Assignment) -> bool:
        wl = e.workload
        preemptor = Preemptor(q.cq, wl.priority, wl.created, a.usage, a.short)
        pool = self.pools[self.book.tree_of(q.cq.name)]
        if self.future_shares is not None:
            victims = find_fair_victims(
                self.future,
                self.future_shares,
                preemptor,
                self.holders,
                pool,
                self.taken,
                self.fair.preemption_strategies,
            )
        else:
            victims = find_victims(self.future, preemptor, self.holders, pool, self.taken)
        if not victims:
            return False
        # Hold the preemptor's quota while its victims still run, so nothing else takes what they free.
        q.quota.add(a.usage)
        future = self.future.queues
        future[q.cq.name].add(a.usage)
        for h, _ in victims:
            future[h.cluster_queue].add(h.usage, -1)
        e.outcome = PREEMPTING
        self.taken.update((h.key, h) for h, _ in victims)
        self.preemptions.append(
            PreemptionDecision(
                wl.key,
                wl.uid,
                q.cq.name,
                tuple(
                    Victim(h.key, h.uid, h.cluster_queue, reason, victim_message(wl.uid, reason))
                    for h, reason in victims
                ),
            )
        )
        return True

    # -- pending reasons ------------------------------------------------------------------------------------

    def _explain(self, positions: int | None) -> None:
        """Reasons for everything left (the first ``positions`` of each queue), computed against the final usage of
        the pass (memoised per shape). One tuple lookup and one struct per waiting workload explained."""
        append = self.pending.append
        preempting = (
            constants.REASON_WAITING_FOR_PREEMPTED_WORKLOADS,
            "waiting for preempted workloads to be evicted",
            RETRY_ON_PREEMPTED,
        )
        for q in self.queues.values():
            length = q.total - sum(1 for e in q.entries if e.outcome == ADMITTED)
            if not length:
                continue
            strict = q.cq.queueing_strategy == STRICT_FIFO
            memo: dict[tuple[Demand, bool], tuple[str, str, str]] = {}
            behind: tuple[str, str, str] | None = None  # StrictFIFO: the reason of those behind the blocker
            cq_name, last = q.cq.name, length if positions is None else min(length, positions)
            position = 0
            whole = positions is None or positions >= length
            for e in q.in_order(whole=whole, demand_of=self.demands.of):
                if e.outcome == ADMITTED:
                    continue
                position += 1
                if position > last:
                    break
                if e.outcome == PREEMPTING:
                    reason, text, retry = preempting
                elif e.outcome == FAILED:
                    key = (e.demand, e.preemption_failed)
                    explained = memo.get(key)
                    if explained is None:
                        explained = memo[key] = self._shortage(q, e)
                    reason, text, retry = explained
                    if strict:
                        behind = _behind(e.workload)
                else:
                    reason, text, retry = behind or _behind(None)
                wl = e.workload
                append(PendingDecision(wl.key, wl.uid, cq_name, reason, text, position, length, retry))

    def _shortage(self, q: WaitingQueue, e: Entry) -> tuple[str, str, str]:
        """(reason, message, retry_on) of a head that did not fit, against the final usage of the pass."""
        explained = q.assigner.assign(e.demand, e.demand.full_counts(), explain=True)
        reason, text, retry = explain_shortage(explained, q.cq, preemption_failed=e.preemption_failed)
        if self.shares is not None and q.quota.parent is not None:
            text = f"{text}; {fair_note(self.shares, q.quota, q.cq.weight, explained.usage)}"
        return reason, text, retry

    def _pend(
        self,
        wl: Workload,
        cq: str | None,
        reason: str,
        detail: str,
        retry_on: str,
        position: int | None = None,
        length: int | None = None,
    ) -> None:
        self.pending.append(PendingDecision(wl.key, wl.uid, cq, reason, detail, position, length, retry_on))


def _behind(blocker: Workload | None) -> tuple[str, str, str]:
    """The reason of a StrictFIFO workload waiting behind a head that does not fit."""
    name = f"{blocker.namespace}/{blocker.name}" if blocker is not None else "an earlier workload"
    return (
        constants.REASON_WAITING_FOR_QUOTA,
        f"StrictFIFO: waiting behind {name}, which does not fit",
        RETRY_ON_QUOTA_FREED,
    )
