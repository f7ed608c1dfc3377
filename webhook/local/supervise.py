"""``python -m webhook.local.supervise -- CMD...``: keep one command running, as a kubelet keeps a pod's container.

Backs ``turnstile cluster up --with-turnstile``: the local cluster outlives the command that started it, so nothing
else would notice a Turnstile that exited (a bug, an API-server stall longer than it tolerates) and the cluster
would stay without webhooks. The supervisor restarts the command whenever it exits, after a backoff that doubles
from 1 s to 30 s (and starts over once a run lasted a minute); SIGTERM or SIGINT is passed on to the command, and
the supervisor exits once it has stopped. The command dies with the supervisor (``PR_SET_PDEATHSIG``).
Must not: be used by the production packages (in a cluster, the kubelet does this).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from types import FrameType

BACKOFF_START, BACKOFF_MAX, HEALTHY_RUN = 1.0, 30.0, 60.0


def _die_with_supervisor() -> None:
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def supervise(command: Sequence[str], *, backoff: tuple[float, float] = (BACKOFF_START, BACKOFF_MAX)) -> int:
    stopping = threading.Event()
    child: subprocess.Popen[bytes] | None = None

    def stop(signum: int, frame: FrameType | None) -> None:
        stopping.set()
        if child is not None and child.poll() is None:
            child.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    delay = backoff[0]
    while True:
        started = time.monotonic()
        # preexec_fn is safe here: the supervisor has no other threads, and it only calls prctl.
        child = subprocess.Popen(command, preexec_fn=_die_with_supervisor)
        if stopping.is_set():  # the signal came while it started, before ``child`` named it: pass it on now
            child.send_signal(signal.SIGTERM)
        code = child.wait()
        if stopping.is_set():
            return code
        if time.monotonic() - started > HEALTHY_RUN:
            delay = backoff[0]
        print(f"supervise: {command[0]} exited with {code}; starting it again in {delay:.0f}s", file=sys.stderr)
        sys.stderr.flush()
        if stopping.wait(delay):
            return code
        delay = min(delay * 2, backoff[1])


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        print("usage: python -m webhook.local.supervise -- COMMAND [ARG...]", file=sys.stderr)
        return 2
    return supervise(args)


if __name__ == "__main__":
    sys.exit(main())
