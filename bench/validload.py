"""The soak's steady valid reviews sent the way kube-apiserver sends them, and where each one's time went.

Owns: running ``hack/loadgen`` (Go's HTTP/1.1 client over TLS, open loop, latency counted from each request's due
time; built into ~/.cache/turnstile by ``hack/build-loadgen.sh``) in a scheduling group of its own, reading its
lines, and matching them with the webhook server's own (``webhook.requesttimes``): on each connection the k-th
answer the client read is the k-th the server wrote. Each matched review's time from due to done then splits into
- ``to server``: due → the server's outermost middleware: the client's own delay (its dispatcher, a free or new
  connection, TLS, the write), the kernel's delivery, and the serving loop noticing, decrypting and parsing;
- ``server``: the middleware → the answer written to the transport (the handler and the write; or the client's
  first byte, if that came before the server noted its write);
- ``back``: written by the server → the client's first byte (the kernel, the client noticing);
- ``read``: the first byte → the whole answer read by the client.
Where the client noted when it wrote the request, ``to server`` splits once more into ``send`` (due → written,
the client's part, an upper bound: noted after the write returned) and ``inbound`` (the rest).
All times are CLOCK_MONOTONIC. Must not: start or judge Turnstile; the soak does.
"""

from __future__ import annotations

import subprocess
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from bench.admission import job_review, percentile
from webhook.requesttimes import Timed

ROUTE = "/mutate/batch/v1/jobs"
SEGMENTS = ("to server", "server", "back", "read")
HERE = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Sent:
    """One line of loadgen: what happened to one request (times are 0 where it never got that far)."""

    index: int
    due: float
    wrote: float
    first_byte: float
    done: float
    port: int
    reused: bool
    status: int
    error: str

    @property
    def outcome(self) -> str:
        return str(self.status) if self.status else (self.error.rsplit(":", 1)[-1].strip() or "no answer")


def build() -> Path:
    """The loadgen binary (built once per version of its sources)."""
    done = subprocess.run(["bash", str(HERE / "hack" / "build-loadgen.sh")], capture_output=True, text=True, check=True)
    return Path(done.stdout.strip().splitlines()[-1])


class LoadGen:
    """``hack/loadgen`` sending ``rate`` reviews a second for ``seconds``, at ``niceness`` in a session and
    scheduling group of its own (``autogroups``); ``sched`` reads a pid's (CPU, runnable wait) seconds, kept in
    ``self.sched`` while it runs; ``finish`` waits for it and returns its lines."""

    def __init__(
        self, binary: Path, workdir: Path, *, port: int, ca_pem: str, rate: int, seconds: float, niceness: int,
        autogroups: bool, sched: Callable[[int], tuple[float, float]],
    ) -> None:  # fmt: skip
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "ca.pem").write_text(ca_pem)
        count = int(rate * seconds)
        (workdir / "bodies").write_bytes(b"\n".join(job_review(i) for i in range(count)) + b"\n")
        self._out = workdir / "sent"
        group = 'echo "$0" > /proc/self/autogroup 2>/dev/null; ' if autogroups else ""
        self.process = subprocess.Popen(
            ["sh", "-c", group + 'exec nice -n "$0" "$@"', str(niceness), str(binary),
             f"-url=https://127.0.0.1:{port}{ROUTE}", f"-ca={workdir / 'ca.pem'}", f"-bodies={workdir / 'bodies'}",
             f"-rate={rate}", f"-seconds={seconds}", f"-out={self._out}"],
            start_new_session=True, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self._sched = sched
        self.sched = (0.0, 0.0)
        self._watch = threading.Thread(target=self._watch_sched, name="loadgen-sched", daemon=True)
        self._watch.start()

    def _watch_sched(self) -> None:
        # Its CPU and runnable-wait time, read until it exits (a process's schedstat is gone once it is reaped).
        first = self._sched(self.process.pid)
        while self.process.poll() is None:
            now = self._sched(self.process.pid)
            if now != (0.0, 0.0):
                self.sched = (now[0] - first[0], now[1] - first[1])
            threading.Event().wait(0.2)

    def finish(self, timeout: float) -> list[Sent]:
        _, err = self.process.communicate(timeout=timeout)
        self._watch.join(5)
        if self.process.returncode != 0:
            raise RuntimeError(f"loadgen exited with {self.process.returncode}: {err.strip()}")
        return read(self._out)


def read(path: Path) -> list[Sent]:
    found = []
    for line in path.read_text().splitlines():
        index, due, wrote, first, done, port, reused, status, error = line.split(" ", 8)
        found.append(
            Sent(int(index), float(due), float(wrote), float(first), float(done), int(port), reused == "true",
                 int(status), error.strip('"'))
        )  # fmt: skip
    return found


@dataclass(frozen=True)
class Split:
    """One review both sides saw: its five segments, in seconds."""

    sent: Sent
    timed: Timed

    @property
    def total(self) -> float:
        return self.sent.done - self.sent.due

    def segment(self, name: str) -> float:
        s, t = self.sent, self.timed
        return {
            "to server": t.started - s.due,
            "server": min(t.written, s.first_byte) - t.started,
            "back": s.first_byte - min(t.written, s.first_byte),
            "read": s.done - s.first_byte,
        }[name]

    @property
    def send(self) -> float | None:
        """The client's share of ``to server``, when it is known and ends before the server started."""
        wrote = self.sent.wrote
        return wrote - self.sent.due if wrote and wrote <= self.timed.started else None


# The two processes read the same clock; the slack covers the rounding of the lines to microseconds. Each side notes
# a write after the write returned, and may wait for a CPU in between while the other side, woken by the bytes,
# already runs: the client's "wrote" may come after the server's start, and the server's "written" after the
# client's first byte. Neither happens before the request was due or after its answer came.
SLACK = 2e-6


def match(sent: Iterable[Sent], timed: Iterable[Timed]) -> tuple[list[Split], int]:
    """Pairs the k-th answered request of each connection with the server's k-th line of that port (HTTP/1.1:
    one request at a time per connection); a pair whose server start does not fall between the request's due time
    and its answer's first byte is dropped.
    Returns the pairs and how many answered requests found none."""
    by_port: dict[int, list[Sent]] = {}
    for s in sent:
        if s.status and s.first_byte:
            by_port.setdefault(s.port, []).append(s)
    served: dict[int, list[Timed]] = {}
    for t in timed:
        if t.route == ROUTE:
            served.setdefault(t.port, []).append(t)
    pairs = []
    unmatched = 0
    for port, requests in by_port.items():
        # In answer order: Go's client may note a request written only after its answer came (see SLACK).
        requests.sort(key=lambda s: s.first_byte)
        lines = sorted(served.get(port, []), key=lambda t: t.started)
        for s, t in zip(requests, lines, strict=False):
            if s.due - SLACK <= t.started <= s.first_byte + SLACK:
                pairs.append(Split(s, t))
            else:
                unmatched += 1
        unmatched += max(0, len(requests) - len(lines))
    return pairs, unmatched


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def _line(name: str, values: list[float]) -> str:
    return (
        f"  {name:<9} p50 {_ms(percentile(values, 0.5))} / p99 {_ms(percentile(values, 0.99))} / "
        f"max {_ms(max(values))} ms"
    )


def report(sent: list[Sent], timed: list[Timed], slow: float = 0.010) -> str:
    """Where the valid reviews' time went: each segment's p50 / p99 / max, and for the reviews over ``slow`` (from
    due to done) the share of their time in each segment."""
    pairs, unmatched = match(sent, timed)
    lines = [f"valid reviews split by the server's own times: {len(pairs)} matched, {unmatched} not"]
    if not pairs:
        return "\n".join(lines)
    lines.append(_line("total", [p.total for p in pairs]))
    for name in SEGMENTS:
        lines.append(_line(name, [p.segment(name) for p in pairs]))
    known = [p for p in pairs if p.send is not None]
    if known:
        lines.append(f"  of 'to server', the client's send (known for {len(known)}):")
        lines.append(_line("send", [p.send or 0.0 for p in known]))
        lines.append(_line("inbound", [p.segment("to server") - (p.send or 0.0) for p in known]))
    late = [p for p in pairs if p.total > slow]
    if late:
        spent = Counter({name: sum(p.segment(name) for p in late) for name in SEGMENTS})
        whole = sum(p.total for p in late)
        sends = [p.send for p in late if p.send is not None]
        lines.append(
            f"  the {len(late)} over {slow * 1000:.0f} ms spent their time in: "
            + ", ".join(f"{name} {spent[name] / whole:.0%}" for name in SEGMENTS)
            + (f" (the client's send, where known: {sum(sends) / whole:.0%})" if sends else "")
        )
    return "\n".join(lines)


def server_only(timed: list[Timed]) -> str:
    """The server's own time (middleware → answer written) for the valid route, without a client to match."""
    own = [t.written - t.started for t in timed if t.route == ROUTE]
    if not own:
        return "server's own time for valid reviews: none recorded"
    return f"server's own time for {len(own)} valid reviews (middleware → answer written):\n" + _line("server", own)
