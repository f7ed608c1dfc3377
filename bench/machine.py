"""The line every benchmark prints about the machine it ran on: figures from a 2-core, noisy box only compare
within one run, and the load at the start says how noisy it was."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def describe(*extras: str) -> str:
    """CPU model and count, load average now, kernel, Python, and ``extras`` (library versions that matter)."""
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    parts = [
        cpu_model(),
        f"{os.cpu_count()} CPUs",
        f"load average {load}",
        f"{platform.system()} {platform.release()}",
        f"Python {platform.python_version()} ({platform.python_implementation()})",
        *extras,
    ]
    return ", ".join(parts)
