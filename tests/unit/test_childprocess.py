"""Children started by ``webhook.childprocess``: the pipe, exit codes as multiprocessing reports them, no resource
tracker, and a review worker that does not import the server's stack."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from multiprocessing.connection import Connection

import pytest

from webhook import childprocess

pytestmark = pytest.mark.timeout(60)


def echo(conn: Connection, prefix: str) -> None:
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        conn.send(f"{prefix}{message}")


def exit_with(conn: Connection, code: int) -> None:
    sys.exit(code)


def fail(conn: Connection) -> None:
    raise RuntimeError("on purpose")


def report_modules(conn: Connection) -> None:
    import webhook.reviewpool  # noqa: F401  (what a review worker imports)

    conn.send(sorted(sys.modules))


def sleep_forever(conn: Connection) -> None:
    conn.recv()  # never sent: waits until killed


def test_the_child_runs_its_target_with_its_end_of_the_pipe() -> None:
    child, conn = childprocess.start(echo, "got ", name="echo")
    conn.send("one")
    assert conn.recv() == "got one"
    assert child.is_alive()
    conn.close()  # the child sees EOF and returns
    child.join(20)
    assert not child.is_alive()
    assert child.exitcode == 0


@pytest.mark.parametrize(
    ("target", "args", "code"),
    [
        pytest.param(exit_with, (3,), 3, id="sys-exit-code"),
        pytest.param(fail, (), 1, id="uncaught-exception"),
    ],
)
def test_exit_codes_read_as_multiprocessing_reports_them(target: object, args: tuple[object, ...], code: int) -> None:
    child, conn = childprocess.start(target, *args, name="exits")  # type: ignore[arg-type]
    child.join(20)
    conn.close()
    assert child.exitcode == code


def test_a_killed_child_reports_minus_the_signal_and_join_returns_after_its_timeout() -> None:
    child, conn = childprocess.start(sleep_forever, name="sleeper")
    child.join(0.2)
    assert child.is_alive(), "join returns when its timeout passes"
    assert child.exitcode is None
    child.kill()
    child.join(20)
    conn.close()
    assert child.exitcode == -signal.SIGKILL


def test_no_resource_tracker_is_started_and_the_worker_imports_no_server_stack() -> None:
    """In a fresh interpreter (this one's may have started a tracker for other tests): after a review worker has
    started, the parent has exactly one child, and the worker's module pulled in neither aiohttp nor the client."""
    script = textwrap.dedent(
        """
        import pathlib
        from webhook import childprocess
        from tests.unit.test_childprocess import report_modules

        def children():
            found = set()
            for task in pathlib.Path("/proc/self/task").glob("*"):
                found |= set((task / "children").read_text().split())
            return found

        child, conn = childprocess.start(report_modules, name="probe")
        loaded = conn.recv()
        print(len(children()))
        print(" ".join(m for m in loaded if m.split(".")[0] in ("aiohttp", "kubernetes_asyncio", "prometheus_client")))
        child.join(20)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    ).stdout.splitlines()
    assert out[0] == "1", f"children of the parent: {out[0]} (a resource tracker would make it 2)"
    assert out[1] == "", f"the review worker's imports include the server's stack: {out[1]}"
