"""Logs: one JSON object per line with the object's identity; readable text for the CLI."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from webhook.logs import configure, key_fields, object_fields

JOB = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": "team-a"}}


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    """The root logger sends to a buffer for the test, and gets its own handlers (pytest's) back afterwards."""
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    buffer = io.StringIO()
    yield buffer
    root.handlers[:] = saved_handlers
    root.setLevel(saved_level)


def lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in stream.getvalue().splitlines()]


def test_json_line_has_time_level_logger_message_and_object_identity(stream: io.StringIO) -> None:
    configure("debug", json=True, stream=stream)
    logging.getLogger("webhook.controller").info(
        "admitted %s", "train", extra=object_fields(JOB) | {"cluster_queue": "cq"}
    )
    [line] = lines(stream)
    assert line["level"] == "info"
    assert line["logger"] == "webhook.controller"
    assert line["message"] == "admitted train"
    assert (line["kind"], line["namespace"], line["name"], line["cluster_queue"]) == ("Job", "team-a", "train", "cq")
    assert line["time"].endswith("+00:00")


def test_every_record_is_exactly_one_line_even_with_newlines_and_tracebacks(stream: io.StringIO) -> None:
    configure(logging.INFO, json=True, stream=stream)
    log = logging.getLogger("t")
    try:
        raise ValueError("boom\nsecond line")
    except ValueError:
        log.exception("failed\nbadly")
    [line] = lines(stream)
    assert line["message"] == "failed\nbadly"
    assert "ValueError: boom" in line["exception"]


def test_extras_that_are_not_json_are_written_as_text(stream: io.StringIO) -> None:
    configure(json=True, stream=stream)
    logging.getLogger("t").warning("x", extra={"path": Path("/etc/turnstile"), "count": 3})
    [line] = lines(stream)
    assert line["path"] == "/etc/turnstile"
    assert line["count"] == 3


def test_an_extra_cannot_overwrite_the_line_fields(stream: io.StringIO) -> None:
    configure(json=True, stream=stream)
    logging.getLogger("real").info("m", extra={"level": "fake", "logger": "fake", "time": "fake"})
    [line] = lines(stream)
    assert (line["level"], line["logger"]) == ("info", "real")
    assert line["time"] != "fake"


def test_level_filters(stream: io.StringIO) -> None:
    configure("warning", json=True, stream=stream)
    logging.getLogger("t").info("hidden")
    logging.getLogger("t").warning("shown")
    assert [line["message"] for line in lines(stream)] == ["shown"]


def test_configure_twice_does_not_duplicate_lines(stream: io.StringIO) -> None:
    configure(json=True, stream=stream)
    configure(json=True, stream=stream)
    logging.getLogger("t").info("once")
    assert len(lines(stream)) == 1


def test_text_format_is_human_readable(stream: io.StringIO) -> None:
    configure(json=False, stream=stream)
    logging.getLogger("turnstile").info("pending", extra=object_fields(JOB) | {"reason": "WaitingForQuota"})
    text = stream.getvalue()
    assert "info" in text
    assert "turnstile: pending [Job/team-a/train] reason=WaitingForQuota" in text
    assert not text.lstrip().startswith("{")


def test_key_fields_for_when_only_the_key_is_at_hand(stream: io.StringIO) -> None:
    configure(json=True, stream=stream)
    logging.getLogger("t").info("deleted", extra=key_fields(kind="Workload", namespace="ns", name="wl"))
    [line] = lines(stream)
    assert (line["kind"], line["namespace"], line["name"]) == ("Workload", "ns", "wl")
    assert "k8s_object" not in line


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(JOB, {"kind": "Job", "namespace": "team-a", "name": "train"}, id="namespaced"),
        pytest.param(
            {"kind": "ClusterQueue", "metadata": {"name": "cq"}},
            {"kind": "ClusterQueue", "name": "cq"},
            id="cluster-scoped",
        ),
        pytest.param({}, {}, id="empty"),
    ],
)
def test_object_fields(obj: dict[str, Any], expected: dict[str, str], stream: io.StringIO) -> None:
    configure(json=True, stream=stream)
    logging.getLogger("t").info("m", extra=object_fields(obj))
    [line] = lines(stream)
    assert {k: line[k] for k in ("kind", "namespace", "name") if k in line} == expected
