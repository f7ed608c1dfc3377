"""Typed values of Kueue's Configuration that the inner layers read (``waitForPodsReady`` and its requeuing).

Owns: the value types; ``webhook.config`` reads the file, checks it and builds them.
Must not: read files or the environment.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class RequeuingStrategy:
    backoff_base_seconds: int = 60
    backoff_max_seconds: int = 3600
    backoff_limit_count: int | None = None


@dataclass(frozen=True)
class WaitForPodsReady:
    enable: bool = False
    timeout_seconds: float = 300.0
    requeuing: RequeuingStrategy = field(default_factory=RequeuingStrategy)
