"""The top-level ``turnstile`` command line: what it says about itself."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from webhook.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_version_is_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    expected = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"turnstile {expected}\n"
