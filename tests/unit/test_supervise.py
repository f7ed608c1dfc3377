"""The local cluster's supervisor starts its command again whenever it exits, and stops it on SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

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
    with supervisor.stdout:
        assert supervisor.stdout.readline().strip() == "up"
        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(timeout=20) == 0
    assert marker.read_text() == "ok"
