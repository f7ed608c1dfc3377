"""The serving thread's short time slice: taken by the kernel, keeping policy and niceness, not passed on."""

from __future__ import annotations

import os
import platform
import threading
from collections.abc import Callable
from typing import Any

import pytest

from webhook import schedslice

pytestmark = pytest.mark.timeout(30)

RESET_ON_FORK = 0x40000000


def kernel_takes_custom_slices() -> bool:
    release = tuple(int(part) for part in platform.release().split(".")[:2] if part.isdigit())
    return platform.system() == "Linux" and platform.machine() in ("x86_64", "aarch64") and release >= (6, 12)


def on_a_thread(work: Callable[[], Any]) -> Any:
    """``work``'s result, run on a fresh thread: scheduling attributes are per thread, the test's own stay as they
    are."""
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(work()))
    thread.start()
    thread.join()
    return out[0]


@pytest.mark.parametrize(
    "policy", [pytest.param(os.SCHED_OTHER, id="normal"), pytest.param(os.SCHED_BATCH, id="batch")]
)
def test_the_slice_is_taken_and_policy_and_niceness_are_kept(policy: int) -> None:
    def work() -> tuple[bool, tuple[int, int] | None, int]:
        os.sched_setscheduler(0, policy, os.sched_param(0))
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 3)
        taken = schedslice.request_short_slice()
        return taken, schedslice.current_slice(), os.sched_getscheduler(0) & ~RESET_ON_FORK

    taken, current, policy_after = on_a_thread(work)
    if not kernel_takes_custom_slices():
        assert not taken
        pytest.skip("this kernel has no custom slices for fair threads (Linux 6.12)")
    assert taken
    assert current == (int(schedslice.SERVING_SLICE_SECONDS * 1e9), 3)
    assert policy_after == policy


def test_threads_started_afterwards_keep_the_kernels_default() -> None:
    if not kernel_takes_custom_slices():
        pytest.skip("this kernel has no custom slices for fair threads (Linux 6.12)")
    default = on_a_thread(schedslice.current_slice)

    def work() -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
        assert schedslice.request_short_slice()
        return schedslice.current_slice(), on_a_thread(schedslice.current_slice)

    own, child = on_a_thread(work)
    assert own is not None
    assert own[0] == int(schedslice.SERVING_SLICE_SECONDS * 1e9)
    assert child == default
