"""The dashboard's HTML, rendered on the server from plain objects: no frontend build, one small script.

Owns: the page shell (style and the script that follows server-sent events and submits the fit form), the queues
fragment (cohorts, ClusterQueues with a usage bar per flavor and resource, each queue's pending list with
positions and reasons), a workload's detail (conditions and events), and the fit answer.
Must not: do I/O or compute positions and answers (they come from ``visibility.pending`` and ``core.fit``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from webhook.api.views import WorkloadRecord
from webhook.core.fit import FitAnswer
from webhook.usercli.candidate import fit_text
from webhook.usercli.views import ClusterQueueView, workload_state
from webhook.visibility.summary import PendingEntry

Obj = Mapping[str, Any]
PENDING_SHOWN = 20

STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5rem;color:#222;max-width:1100px}
h1{font-size:1.4rem} h2{font-size:1.1rem;margin-top:1.5rem} h3{font-size:1rem;margin:.2rem 0}
.cohort{border-left:4px solid #8ab;padding-left:.8rem;margin:1rem 0}
.cq{border:1px solid #ccc;border-radius:6px;padding:.6rem .8rem;margin:.6rem 0}
.bar{background:#eee;border-radius:3px;height:.9rem;width:260px;display:inline-block;vertical-align:middle}
.fill{display:block;background:#4a8;height:100%;border-radius:3px} .fill.over{background:#d84}
table{border-collapse:collapse;font-size:.9rem} td,th{padding:.15rem .6rem;text-align:left;border-bottom:1px solid #eee}
.muted{color:#777} pre{background:#f6f6f6;padding:.6rem;white-space:pre-wrap}
textarea{width:100%;height:12rem;font-family:monospace}
"""

SCRIPT = """
const live = new EventSource('events');
live.addEventListener('queues', (e) => { document.getElementById('queues').innerHTML = e.data; });
live.onopen = () => { document.getElementById('live').textContent = 'live'; };
live.onerror = () => { document.getElementById('live').textContent = 'reconnecting'; };
const form = document.getElementById('fit-form');
if (form) form.addEventListener('submit', async (e) => {
  e.preventDefault();
  const answer = await fetch('fit', {method: 'POST', body: new FormData(form)});
  document.getElementById('fit-result').innerHTML = await answer.text();
});
"""


def page(title: str, body: str, *, live: bool = False) -> str:
    script = f"<script>{SCRIPT}</script>" if live else ""
    status = ' <span id="live" class="muted">connecting</span>' if live else ""
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
        f"<style>{STYLE}</style></head><body><h1><a href='/'>Turnstile</a> · {escape(title)}{status}</h1>"
        f"{body}{script}</body></html>"
    )


def _bar(used_percent: int | None) -> str:
    width = min(100, used_percent or 0)
    over = " over" if (used_percent or 0) > 100 else ""
    return f"<span class='bar'><span class='fill{over}' style='width:{width}%'></span></span>"


def _pending_rows(pending: Sequence[PendingEntry]) -> str:
    if not pending:
        return "<p class='muted pending-empty'>Nothing pending.</p>"
    rows = []
    for position, entry in enumerate(pending[:PENDING_SHOWN], start=1):
        _, reason, message = workload_state(entry.workload)
        link = f"/workloads/{escape(entry.namespace)}/{escape(entry.name)}"
        rows.append(
            f"<tr class='pending'><td>{position}</td><td><a href='{link}'>{escape(entry.namespace)}/"
            f"{escape(entry.name)}</a></td><td>{escape(entry.local_queue)}</td><td>{entry.priority}</td>"
            f"<td>{escape(reason)}</td><td>{escape(message)}</td></tr>"
        )
    more = len(pending) - PENDING_SHOWN
    tail = f"<p class='muted'>and {more} more</p>" if more > 0 else ""
    head = "<tr><th>#</th><th>workload</th><th>LocalQueue</th><th>priority</th><th>reason</th><th>why</th></tr>"
    return f"<table>{head}{''.join(rows)}</table>{tail}"


def cluster_queue_card(cq: ClusterQueueView, pending: Sequence[PendingEntry]) -> str:
    quota_rows = "".join(
        f"<tr><td>{escape(q.flavor)}</td><td>{escape(q.resource)}</td><td>{_bar(q.reserved_percent)}</td>"
        f"<td class='usage'>{escape(q.reserved)} / {escape(q.nominal)}</td>"
        f"<td>{'' if q.reserved_percent is None else f'{q.reserved_percent}%'}</td></tr>"
        for q in cq.quota
    )
    state = "active" if cq.active else f"inactive (stopPolicy {cq.stop_policy})"
    return (
        f"<div class='cq' id='cq-{escape(cq.name)}'><h3>ClusterQueue {escape(cq.name)} "
        f"<span class='muted'>{state}; {cq.admitted} admitted, {len(pending)} pending</span></h3>"
        f"<table>{quota_rows}</table><h3>Pending</h3>{_pending_rows(pending)}</div>"
    )


def queues_fragment(cqs: Sequence[ClusterQueueView], pending: Mapping[str, Sequence[PendingEntry]]) -> str:
    if not cqs:
        return "<p class='muted'>No ClusterQueues.</p>"
    by_cohort: dict[str, list[ClusterQueueView]] = {}
    for cq in sorted(cqs, key=lambda c: c.name):
        by_cohort.setdefault(cq.cohort, []).append(cq)
    parts = []
    for cohort in sorted(by_cohort):
        cards = "".join(cluster_queue_card(cq, pending.get(cq.name, ())) for cq in by_cohort[cohort])
        title = f"Cohort {escape(cohort)}" if cohort else "No cohort"
        parts.append(f"<div class='cohort'><h2>{title}</h2>{cards}</div>")
    return "".join(parts)


FIT_FORM = """
<h2>Would it fit?</h2>
<form id="fit-form"><p>A batch/v1 Job or a Workload (YAML); its namespace, or:
<input name="namespace" value="default" size="16"></p>
<textarea name="manifest" id="fit-manifest" placeholder="apiVersion: batch/v1&#10;kind: Job&#10;..."></textarea>
<p><button type="submit" id="fit-submit">Ask the scheduler</button></p></form>
<div id="fit-result"></div>
"""


def overview(queues_html: str) -> str:
    return page("queues", f"<div id='queues'>{queues_html}</div>{FIT_FORM}", live=True)


def fit_answer(subject: str, answer: FitAnswer) -> str:
    return f"<pre class='fit-answer'>{escape(fit_text(subject, answer))}</pre>"


def fit_error(message: str) -> str:
    return f"<p class='fit-error'>{escape(message)}</p>"


def workload_detail(workload: WorkloadRecord, events: Sequence[Obj], answer: FitAnswer | None, subject: str) -> str:
    meta, spec = workload.metadata, workload.spec
    state, reason, message = workload_state(workload)
    conditions = "".join(
        f"<tr><td>{escape(str(c.get('type')))}</td><td>{escape(str(c.get('status')))}</td>"
        f"<td>{escape(str(c.get('reason', '')))}</td><td>{escape(str(c.get('message', '')))}</td>"
        f"<td>{escape(str(c.get('lastTransitionTime', '')))}</td></tr>"
        for c in workload.conditions
    )
    history = "".join(
        f"<tr><td>{escape(str(e.get('lastTimestamp') or e.get('eventTime') or ''))}</td>"
        f"<td>{escape(str(e.get('type', '')))}</td><td>{escape(str(e.get('reason', '')))}</td>"
        f"<td>{escape(str(e.get('message', '')))}</td></tr>"
        for e in events
    )
    body = (
        f"<p>State <b>{escape(state)}</b> ({escape(reason)}): {escape(message)}</p>"
        f"<p>LocalQueue {escape(str(spec.get('queueName', '')))}, priority {escape(str(spec.get('priority', 0)))}, "
        f"created {escape(str(meta.get('creationTimestamp', '')))}</p>"
        f"<h2>Conditions</h2><table><tr><th>type</th><th>status</th><th>reason</th><th>message</th><th>since</th></tr>"
        f"{conditions}</table><h2>Events</h2><table><tr><th>time</th><th>type</th><th>reason</th><th>message</th></tr>"
        f"{history or '<tr><td colspan=4 class=muted>none</td></tr>'}</table>"
    )
    if answer is not None:
        body += f"<h2>The scheduler, asked now</h2>{fit_answer(subject, answer)}"
    return page(f"Workload {meta.get('namespace', '')}/{meta.get('name', '')}", body)
