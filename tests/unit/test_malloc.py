"""The allocator settings every Turnstile process runs with (``runner.return_large_buffers_to_the_os``) and the TLS
read size of the webhook server (``server.TLS_READ_BYTES``), which must stay under them: a read on the serving loop
must not map memory (strace of 600-byte reads: an mmap and an munmap, or an mremap, per read at asyncio's 256 KiB,
none at 64 KiB).

The allocator cases run in a fresh interpreter (the settings are per process; glibc reads its variables at start).
"""

from __future__ import annotations

import asyncio.sslproto
import os
import subprocess
import sys
from pathlib import Path

from webhook import runner, server, tls

_SETTINGS = """
import os
from webhook.runner import return_large_buffers_to_the_os
return_large_buffers_to_the_os()
print(os.environ["MALLOC_MMAP_THRESHOLD_"])
"""


def _run(code: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    done = subprocess.run(
        [sys.executable, "-c", code], env=clean | env, capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.strip()


def test_the_server_reads_tls_under_the_mmap_threshold(tmp_path: Path) -> None:
    from webhook.admission.options import AdmissionOptions
    from webhook.admission.view import StaticView

    assert server.TLS_READ_BYTES < runner.MMAP_THRESHOLD
    before = asyncio.sslproto.SSLProtocol.max_size
    try:
        certs = tls.issue_webhook_certificates(tmp_path, ["127.0.0.1"])
        server.AdmissionServer(
            view=StaticView(), options=AdmissionOptions(), cert_file=certs.cert_file, key_file=certs.key_file
        )
        assert asyncio.sslproto.SSLProtocol.max_size == server.TLS_READ_BYTES
    finally:
        asyncio.sslproto.SSLProtocol.max_size = before


def test_the_children_inherit_the_threshold_and_glibcs_own_variable_wins() -> None:
    assert _run(_SETTINGS) == str(runner.MMAP_THRESHOLD)
    assert _run(_SETTINGS, MALLOC_MMAP_THRESHOLD_="2097152") == "2097152"
