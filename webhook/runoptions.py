"""``RunOptions``: what ``turnstile run`` was asked to do, shared by the process and the children it starts.

Owns: the value type only, so the runner and the reconciler process can both name it without importing each other.
Must not: do anything; ``webhook.runner`` builds it from the command line and the configuration file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from webhook.config import Config


@dataclass(frozen=True)
class RunOptions:
    config: Config
    cert_file: Path
    key_file: Path
    kubeconfig: Path | None = None
    host: str = ""
    port: int = 9443
    metrics_host: str = ""
    metrics_port: int | None = 8080  # None: no metrics endpoint
    reconcile: bool = True  # False: webhook only (`turnstile serve`)
    visibility_host: str = ""
    visibility_port: int | None = None  # None: no visibility API listener
    identity: str = ""
    review_workers: int = 1  # processes answering reviews over routes.OFFLOAD_BYTES; 0: all on the serving loop
    request_times: Path | None = None  # where the server writes its timestamps of each request (benchmarks only)
