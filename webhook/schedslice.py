"""A short CPU time slice for the serving thread, so that it runs as soon as a request wakes it (Linux EEVDF).

Owns: ``request_short_slice``. Linux's fair scheduler (EEVDF, 6.6 and later) lets a waking thread preempt the
running one only if the waker's virtual deadline comes first, and a deadline lies one time slice ahead, scaled by
the weight of the thread or of its group. With the default slice a nice-0 thread that wakes beside a busy one of
more weight (in the soak the control plane at nice -10; on a node, a neighbour with a larger CPU request) waits
for a CPU until the other's slice is used up: in the issue-18 soak the serving thread was runnable but not running
for ~80% of the time that slow valid reviews took to reach it, while its own handling took under 1 ms at p99.
Since 6.12 a thread may ask for a shorter slice (``sched_setattr`` with ``sched_runtime``, 0.1 ms at least),
without a privilege: its deadline then comes first, so it preempts on waking. Its share of the CPU is unchanged
(it is preempted sooner in turn). The request does not pass to threads or processes started later (reset on fork;
which also starts them at nice 0 if this thread's niceness is negative): the executor threads and the children keep
the kernel's default. On other kernels or systems it does nothing.
Must not: change the thread's policy or niceness.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import threading
from typing import Final

# 0.1 ms, the least the kernel accepts (``bench.wakeup``: a thread waking every 2 ms beside a busy process in another
# session, one CPU, the machine shared with other work at load 4-6). Wake-up lateness p99, default slice → 0.1 ms:
# beside a nice-0 process 1.4 → 0.4 and 4.4 → 1.5 ms; beside a nice -10 one 3.7 → 1.7, 4.5 → 3.4, 3.6 → 0.08 and
# 3.8 → 3.4 ms. A 0.3 ms slice did not help against nice -10 (3.6 ms), whose virtual slice is 0.15 ms.
SERVING_SLICE_SECONDS: Final = 0.0001

_SYS_SCHED_SETATTR: Final = {"x86_64": 314, "aarch64": 274}
_SYS_SCHED_GETATTR: Final = {"x86_64": 315, "aarch64": 275}
_SCHED_FLAG_RESET_ON_FORK: Final = 0x01
_SCHED_RESET_ON_FORK_BIT: Final = 0x40000000  # how sched_getscheduler shows that flag, beside the policy


class SchedAttr(ctypes.Structure):
    """``struct sched_attr`` (include/uapi/linux/sched/types.h), its first version with the utilisation clamps."""

    _fields_ = [
        ("size", ctypes.c_uint32),
        ("sched_policy", ctypes.c_uint32),
        ("sched_flags", ctypes.c_uint64),
        ("sched_nice", ctypes.c_int32),
        ("sched_priority", ctypes.c_uint32),
        ("sched_runtime", ctypes.c_uint64),
        ("sched_deadline", ctypes.c_uint64),
        ("sched_period", ctypes.c_uint64),
        ("sched_util_min", ctypes.c_uint32),
        ("sched_util_max", ctypes.c_uint32),
    ]


def request_short_slice(seconds: float = SERVING_SLICE_SECONDS) -> bool:
    """Asks for a time slice of ``seconds`` for the calling thread, keeping its policy and niceness; True if the
    kernel took it. Only for threads that run briefly each time they wake, like an event loop answering requests."""
    number = _SYS_SCHED_SETATTR.get(platform.machine())
    if number is None or not hasattr(os, "sched_getscheduler"):
        return False
    policy = os.sched_getscheduler(0) & ~_SCHED_RESET_ON_FORK_BIT
    if policy not in (os.SCHED_OTHER, os.SCHED_BATCH):
        return False  # a real-time or idle thread: a fair-class slice means nothing to it
    tid = ctypes.c_int(0)  # the calling thread
    nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    # The policy is passed, not kept (SCHED_FLAG_KEEP_POLICY): with it, the kernel (6.18) ignored the reset on fork.
    attr = SchedAttr(
        size=ctypes.sizeof(SchedAttr),
        sched_policy=policy,
        sched_flags=_SCHED_FLAG_RESET_ON_FORK,
        sched_nice=nice,
        sched_runtime=int(seconds * 1e9),
    )
    with contextlib.suppress(OSError, AttributeError):
        return int(ctypes.CDLL(None, use_errno=True).syscall(number, tid, ctypes.byref(attr), 0)) == 0
    return False


def current_slice(tid: int = 0) -> tuple[int, int] | None:
    """(time slice in ns, niceness) of thread ``tid`` (0: the calling one), or None if unknown. A thread that asked
    for none has the kernel's default (0.7 ms times 1 + log2 of the CPUs, at most 4)."""
    number = _SYS_SCHED_GETATTR.get(platform.machine())
    if number is None:
        return None
    attr = SchedAttr()
    with contextlib.suppress(OSError, AttributeError):
        if ctypes.CDLL(None, use_errno=True).syscall(number, tid, ctypes.byref(attr), ctypes.sizeof(attr), 0) == 0:
            return int(attr.sched_runtime), int(attr.sched_nice)
    return None
