"""The local cluster's supervisor starts its command again whenever it exits, and stops it on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from webhook.local import supervise

pytestmark = pytest.mark.timeout(60)


def test_a_command_that_exits_is_started_again_and_stopped_on_sigterm(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    # Each run appends a line, then exits with 3: the supervisor must start it again (after 1 s, then 2 s).
    script = f"open({str(starts)!r}, 'a').write('x\\n'); import sys; sys.exit(3)"
    supervisor = subprocess.Popen(
        [sys.executable, "-m", "webhook.local.supervise", "--", sys.executable, "-c", script],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not starts.exists() or len(starts.read_text().split()) < 2):
            time.sleep(0.1)
        assert len(starts.read_text().split()) >= 2
    finally:
        supervisor.send_signal(signal.SIGTERM)
        _, err = supervisor.communicate(timeout=20)
    assert "exited with 3; starting it again" in err


def test_sigterm_reaches_a_running_command(tmp_path: Path) -> None:
    marker = tmp_path / "stopped"
    script = (
        "import signal, sys, time\n"
        f"signal.signal(signal.SIGTERM, lambda *a: (open({str(marker)!r}, 'w').write('ok'), sys.exit(0)))\n"
        "print('up', flush=True)\n"
        "time.sleep(60)\n"
    )
    supervisor = subprocess.Popen(
        [sys.executable, "-m", "webhook.local.supervise", "--", sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert supervisor.stdout is not None
    try:
        with supervisor.stdout:
            assert supervisor.stdout.readline().strip() == "up"
            supervisor.send_signal(signal.SIGTERM)
            assert supervisor.wait(timeout=20) == 0
    finally:
        supervisor.kill()  # never left running (nor its command, which dies with it) for a later test to find
        supervisor.wait()
    assert marker.read_text() == "ok"


def test_a_sigterm_while_the_command_starts_still_reaches_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # Under load the signal can be handled after the command was started but before the supervisor holds it
    # (seen in CI: the command slept on and the supervisor waited for it). Here the signal comes exactly then.
    real_popen = subprocess.Popen

    def popen_then_sigterm(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        started = real_popen(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGTERM)  # handled here, before the supervisor has the child
        return started

    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    monkeypatch.setattr(supervise.subprocess, "Popen", popen_then_sigterm)
    try:
        code = supervise.supervise([sys.executable, "-c", "import time; time.sleep(5)"])
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    assert code == -signal.SIGTERM  # stopped by the signal, not by the end of its sleep
