"""Child processes of ``turnstile run`` (the reconciler, the review workers): fresh interpreters that import only
what they run, each with a duplex pipe to its parent.

Owns: ``start`` and ``Child`` (the parent side), the bootstrap the child runs (``python -m webhook.childprocess FD``),
and what every child does first for its parent (``die_with_parent``, ``background_priority``).

Why not ``multiprocessing``'s spawn start: it starts a resource-tracker interpreter beside the first child (13 MiB of
RSS that tracks nothing here: our children share no semaphore and no shared memory), and it imports the parent's
``__main__`` (the whole CLI) in every child before the target's module: a review worker took 46 MiB where its
imports need 24. Here the child receives its target (by reference, pickled) and arguments on the pipe, and calls
``target(conn, *args)`` with its end of it. Exit codes read as ``multiprocessing``'s do: 0, the code given to
``sys.exit``, 1 for an uncaught exception, minus the signal's number for a signal.
Must not: import the controller, the client or the server (the review worker imports this module).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from typing import Any, Final

_PR_SET_PDEATHSIG: Final = 1


class Child:
    """A started child: the part of ``multiprocessing.Process``'s interface its owners use."""

    def __init__(self, popen: subprocess.Popen[bytes], name: str) -> None:
        self._popen = popen
        self.name = name

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def exitcode(self) -> int | None:
        """None while it runs; then its exit status, or minus the signal that ended it."""
        return self._popen.poll()

    def is_alive(self) -> bool:
        return self._popen.poll() is None

    def join(self, timeout: float | None = None) -> None:
        """Waits until it has ended, or ``timeout`` seconds (then returns with it still running)."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._popen.wait(timeout)

    def kill(self) -> None:
        """SIGKILL (nothing if it has ended and been waited for)."""
        self._popen.kill()


def start(target: Callable[..., None], *args: Any, name: str) -> tuple[Child, Connection]:
    """Starts ``target(conn, *args)`` in a new interpreter; returns the child and this side of the pipe.

    ``target`` must be a module-level function and ``args`` picklable. Call it from the thread that stays as long
    as the child should (the event loop's): ``PR_SET_PDEATHSIG`` is tied to the thread that started the child.
    """
    ours, theirs = Pipe()
    fd = theirs.fileno()
    try:
        popen = subprocess.Popen(
            [sys.executable, "-m", __name__, str(fd), name], pass_fds=(fd,), stdin=subprocess.DEVNULL
        )
    finally:
        theirs.close()
    ours.send((target, args))
    return Child(popen, name), ours


def die_with_parent(parent: int) -> None:
    """Asks the kernel to SIGKILL this process when its parent dies (Linux); exits at once if it already has."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def background_priority(niceness: int) -> None:
    """This thread (and the threads it starts later) at ``niceness`` and ``SCHED_BATCH``: the kernel then also
    stops letting it preempt a running thread when it wakes (it waits for its turn), so a burst of watch events
    does not cut into a review being answered. Neither needs a privilege; both are per thread on Linux."""
    tid = threading.get_native_id()
    with contextlib.suppress(OSError, AttributeError):
        os.setpriority(os.PRIO_PROCESS, tid, niceness)
    with contextlib.suppress(OSError, AttributeError):
        os.sched_setscheduler(tid, os.SCHED_BATCH, os.sched_param(0))


def _bootstrap(fd: int) -> None:
    conn = Connection(fd)
    target, args = conn.recv()
    target(conn, *args)


if __name__ == "__main__":
    _bootstrap(int(sys.argv[1]))
