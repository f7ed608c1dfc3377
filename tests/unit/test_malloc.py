"""``runner.return_large_buffers_to_the_os``: the allocator settings every Turnstile process runs with.

Each case runs in a fresh interpreter (the settings are per process and glibc reads its variables at start).
"""

from __future__ import annotations

import os
import subprocess
import sys

# What a TLS read does on the serving thread: ask for a 256 KiB buffer (SSLObject.read(max_size); recv is the same
# allocation), get a small record, shrink the buffer. Prints minor page faults per read.
_READS = """
import resource, socket, sys
from webhook.runner import return_large_buffers_to_the_os
return_large_buffers_to_the_os()
a, b = socket.socketpair()
for _ in range(200):
    a.send(b"x" * 600); b.recv(262144)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(2000):
    a.send(b"x" * 600); b.recv(262144)
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 2000)
"""

_SETTINGS = """
import os
from webhook.runner import return_large_buffers_to_the_os
return_large_buffers_to_the_os()
print(os.environ["MALLOC_MMAP_THRESHOLD_"], os.environ["MALLOC_TRIM_THRESHOLD_"])
"""


def _run(code: str, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    done = subprocess.run(
        [sys.executable, "-c", code], env=clean | env, capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.strip()


def test_a_tls_sized_read_buffer_comes_from_the_heap_without_page_faults() -> None:
    # Under glibc's 128 KiB threshold every such read was mmap + mremap + munmap and a fresh page faulted in.
    assert float(_run(_READS)) < 0.2


def test_the_read_test_sees_the_old_threshold_fault() -> None:
    # The same reads with the old settings (128 KiB, set through glibc's own variables, which take precedence).
    assert float(_run(_READS, MALLOC_MMAP_THRESHOLD_="131072", MALLOC_TRIM_THRESHOLD_="131072")) >= 0.9


def test_the_children_inherit_the_settings_and_glibcs_own_variables_win() -> None:
    assert _run(_SETTINGS).split() == [str(1024 * 1024), str(4 * 1024 * 1024)]
    assert _run(_SETTINGS, MALLOC_MMAP_THRESHOLD_="2097152").split() == ["2097152", str(4 * 1024 * 1024)]
